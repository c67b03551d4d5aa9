package job

import (
	"context"
	"strings"
	"testing"
	"time"
)

func validJob() Job {
	return Job{
		Name:     "reports.daily",
		Schedule: "30 2 * * *",
		Run:      func(context.Context) error { return nil },
	}
}

func TestValidateOK(t *testing.T) {
	t.Parallel()
	j := validJob()
	if err := j.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	j.Location = mustLoad(t, "Europe/Berlin")
	j.Timeout, j.Retries, j.RetryBackoff, j.StartingDeadline = time.Minute, 3, time.Second, time.Hour
	if err := j.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	s, err := j.ParsedSchedule()
	if err != nil {
		t.Fatal(err)
	}
	// The location applies: 02:30 in Berlin is 01:30Z in winter.
	if got, want := s.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), time.Date(2026, 1, 1, 1, 30, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Next = %v, want %v", got, want)
	}
}

func TestValidateErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mutate func(*Job)
		want   string
	}{
		{func(j *Job) { j.Name = "" }, `job name "": empty`},
		{func(j *Job) { j.Name = "a b" }, `job name "a b": character ' '`},
		{func(j *Job) { j.Schedule = "61 * * * *" }, `job "reports.daily": schedule "61 * * * *": end of range (61) above maximum (59)`},
		{func(j *Job) { j.Schedule = "" }, `job "reports.daily": schedule "": empty`},
		{func(j *Job) { j.Schedule = "0 0 30 2 *" }, `job "reports.daily": schedule "0 0 30 2 *" never fires`},
		{func(j *Job) { j.Run = nil }, `job "reports.daily": run: must not be nil`},
		{func(j *Job) { j.Timeout = -time.Second }, `job "reports.daily": timeout: must not be negative, got -1s`},
		{func(j *Job) { j.Retries = -1 }, `job "reports.daily": retries: must not be negative, got -1`},
		{func(j *Job) { j.RetryBackoff = -1 }, `job "reports.daily": retryBackoff: must not be negative, got -1ns`},
		{func(j *Job) { j.StartingDeadline = -time.Minute }, `job "reports.daily": startingDeadline: must not be negative, got -1m0s`},
	}
	for _, tc := range tests {
		j := validJob()
		tc.mutate(&j)
		err := j.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
		}
		// ValidateParsed, given the parse (nil when it failed), says the same.
		s, _ := j.ParsedSchedule()
		if got := j.ValidateParsed(s); got == nil || got.Error() != err.Error() {
			t.Errorf("ValidateParsed() = %v, want %v", got, err)
		}
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	err := Job{Name: "x..y", Schedule: "@every 1ms", Retries: -2}.Validate()
	if err == nil {
		t.Fatal("Validate() = nil")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 4 {
		t.Fatalf("Validate() reported %d problems, want 4 (name, schedule, run, retries):\n%v", len(lines), err)
	}
}

func TestValidateZeroJob(t *testing.T) {
	t.Parallel()
	if err := (Job{}).Validate(); err == nil {
		t.Fatal("the zero Job validated")
	}
}
