package job_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cronlock/cronlock/job"
)

// A fixed-hour schedule in Berlin across the 2026 spring-forward: 02:30 does
// not exist on March 29, so that day's run happens once, at 03:00 CEST.
func ExampleParseSchedule() {
	s, err := job.ParseSchedule("CRON_TZ=Europe/Berlin 30 2 * * *", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	t := time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC)
	for range 3 {
		t = s.Next(t)
		fmt.Println(t)
	}
	// Output:
	// 2026-03-28 02:30:00 +0100 CET
	// 2026-03-29 03:00:00 +0200 CEST
	// 2026-03-30 02:30:00 +0200 CEST
}

// "@every" ticks are multiples of the period since the Unix epoch, so every
// replica computes the same ones.
func ExampleParseSchedule_every() {
	s, err := job.ParseSchedule("@every 90s", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	t := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	for range 3 {
		t = s.Next(t)
		fmt.Println(t.Format(time.TimeOnly))
	}
	// Output:
	// 00:01:30
	// 00:03:00
	// 00:04:30
}

func ExampleJob_Validate() {
	j := job.Job{Name: "reports.daily", Schedule: "61 * * * *", Retries: -1}
	fmt.Println(j.Validate())
	// Output:
	// job "reports.daily": schedule "61 * * * *": end of range (61) above maximum (59): 61
	// job "reports.daily": run: must not be nil
	// job "reports.daily": retries: must not be negative, got -1
}

func ExampleFromContext() {
	run := func(ctx context.Context) error {
		info, ok := job.FromContext(ctx)
		if ok {
			fmt.Printf("%s: tick %s, attempt %d\n", info.Job, info.Tick.Format(time.RFC3339), info.Attempt)
		}
		return nil
	}
	ctx := job.NewContext(context.Background(), job.RunInfo{
		Job: "reports.daily", Tick: time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC), Attempt: 1,
	})
	_ = run(ctx)
	// Output:
	// reports.daily: tick 2026-03-29T01:00:00Z, attempt 1
}
