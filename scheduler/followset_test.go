package scheduler_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// followedBy returns, for each job's key, how many of the history
// stream's consumers filter on it, read from the server; ok is false while
// some consumer still follows every key.
func followedBy(t *testing.T, js jetstream.JetStream) (map[string]int, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, "KV_"+scheduler.DefaultHistoryBucket)
	if err != nil {
		t.Fatal(err)
	}
	prefix := "$KV." + scheduler.DefaultHistoryBucket + "."
	counts := map[string]int{}
	infos := st.ListConsumers(ctx)
	all := false
	for info := range infos.Info() {
		filters := info.Config.FilterSubjects
		if info.Config.FilterSubject != "" {
			filters = append(filters, info.Config.FilterSubject)
		}
		for _, f := range filters {
			if f == prefix+">" {
				all = true
			}
			counts[strings.TrimPrefix(f, prefix)]++
		}
	}
	if err := infos.Err(); err != nil {
		t.Fatal(err)
	}
	return counts, !all
}

// startReplicas starts a replica (with a metrics registry) for each of ids,
// each with the jobs "job0"... on schedule, running run(id).
func startReplicas(t *testing.T, url string, ids []string, jobs int, schedule string, run func(id string) func(context.Context) error) (map[string]*replica, map[string]*prometheus.Registry) {
	t.Helper()
	reps := map[string]*replica{}
	regs := map[string]*prometheus.Registry{}
	for _, id := range ids {
		regs[id] = prometheus.NewRegistry()
		r := newReplica(t, url, lockOpts(id), scheduler.Options{Registerer: regs[id], Logger: testLogger(t, id).Level(zerolog.WarnLevel)})
		for i := range jobs {
			addJob(t, r, job.Job{Name: fmt.Sprintf("job%d", i), Schedule: schedule, Run: run(id)})
		}
		reps[id] = r
	}
	for _, r := range reps {
		r.start(t)
	}
	return reps, regs
}

// followedThrice reports whether no consumer follows every key and each
// of the n jobs "job0"... is in exactly three consumers' filters.
func followedThrice(t *testing.T, js jetstream.JetStream, n int) func() bool {
	return func() bool {
		counts, shared := followedBy(t, js)
		if !shared {
			return false
		}
		for i := range n {
			if counts[fmt.Sprintf("job%d", i)] != 3 {
				return false
			}
		}
		return true
	}
}

// reportsLastSuccess reports whether reg has the job's
// cronlock_last_success_timestamp_seconds series.
func reportsLastSuccess(t *testing.T, reg *prometheus.Registry, name string) bool {
	t.Helper()
	_, ok := series(t, reg, "cronlock_last_success_timestamp_seconds")[fmt.Sprintf("job=%q", name)]
	return ok
}

// notFollowers returns the replicas of ids that skipped a tick of the job
// as not one of its followers.
func notFollowers(t *testing.T, regs map[string]*prometheus.Registry, ids []string, name string) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		if series(t, regs[id], "cronlock_ticks_skipped_total")[fmt.Sprintf("job=%q,reason=%q", name, "followers")] > 0 {
			out = append(out, id)
		}
	}
	return out
}

// Beyond three live replicas each job's record is followed by three of
// them: on the server every job's key is in the filter of exactly three
// replicas' consumers, and no consumer follows every key; each tick runs
// once, on one of the job's followers; when they stop, the replicas left
// take the job over.
func TestFollowersShareTheJobs(t *testing.T) {
	t.Parallel()
	const jobs = 8
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	runs := newJobRuns()
	ids := []string{"r1", "r2", "r3", "r4", "r5"}
	reps, regs := startReplicas(t, url, ids, jobs, "* * * * * *", func(id string) func(context.Context) error { return runs.record(id, 0) })
	_, js := natstest.Connect(t, url)
	waitFor(t, 20*time.Second, "each job followed by exactly 3 replicas", followedThrice(t, js, jobs))

	// Each run is one of its job's followers'.
	from := time.Now().Add(time.Second)
	waitFor(t, 15*time.Second, "every job run at 3 ticks since the follow sets settled", func() bool {
		ticks := map[string]map[time.Time]bool{}
		for _, x := range runs.all() {
			if !x.tick.Before(from) {
				if ticks[x.job] == nil {
					ticks[x.job] = map[time.Time]bool{}
				}
				ticks[x.job][x.tick] = true
			}
		}
		for i := range jobs {
			if len(ticks[fmt.Sprintf("job%d", i)]) < 3 {
				return false
			}
		}
		return true
	})
	runners := map[string]map[string]bool{}
	seen := map[string]bool{}
	for _, x := range runs.all() {
		if x.tick.Before(from) {
			continue
		}
		key := x.job + "@" + x.tick.String()
		if seen[key] {
			t.Errorf("%s ran twice at %v", x.job, x.tick)
		}
		seen[key] = true
		if runners[x.job] == nil {
			runners[x.job] = map[string]bool{}
		}
		runners[x.job][x.replica] = true
	}
	// The two replicas that are not a job's followers skip its ticks as
	// such, and never run it.
	for i := range jobs {
		name := fmt.Sprintf("job%d", i)
		others := notFollowers(t, regs, ids, name)
		if len(others) != len(ids)-3 {
			t.Errorf("%s: skipped as not a follower by %v; want %d replicas", name, others, len(ids)-3)
		}
		for id := range runners[name] {
			if slices.Contains(others, id) {
				t.Errorf("%s ran on %s, which skips it as not a follower", name, id)
			}
		}
		if len(runners[name]) == 0 {
			t.Errorf("%s did not run", name)
		}
		// Its followers report its last success; the others do not, even
		// the ones that followed it before the follow sets settled.
		for _, id := range ids {
			reported := reportsLastSuccess(t, regs[id], name)
			if follower := !slices.Contains(others, id); reported != follower {
				t.Errorf("%s on %s: last success reported %v, follower %v", name, id, reported, follower)
			}
		}
	}

	// The replica running job0 stops, three times: the job's next
	// followers take it over, then, with its three followers gone, one of
	// the two replicas left.
	var stopped []string
	for len(stopped) < 4 {
		since := time.Now()
		var by string
		waitFor(t, 15*time.Second, fmt.Sprintf("job0 run by a replica other than %v", stopped), func() bool {
			for _, x := range runs.all() {
				if x.job == "job0" && x.start.After(since) && !slices.Contains(stopped, x.replica) {
					by = x.replica
					return true
				}
			}
			return false
		})
		if len(stopped) == 3 {
			break
		}
		reps[by].stop()
		stopped = append(stopped, by)
	}
}

// A replica that starts following a job (one of the job's followers left)
// learns its shared state from the record at once: with six suspended
// jobs that nothing writes again, each of the four replicas left shows
// every job suspended (its followers from the watch, the others by
// reading the record), and exactly three of them report each job in
// cronlock_job_suspended, at 1.
func TestFollowSetShowsSharedState(t *testing.T) {
	t.Parallel()
	const jobs = 6
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	ctx := context.Background()
	_, js := natstest.Connect(t, url)
	h, err := scheduler.OpenHistory(ctx, js, scheduler.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range jobs {
		if err := h.Suspend(ctx, fmt.Sprintf("job%d", i), "test", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	ids := []string{"r1", "r2", "r3", "r4", "r5"}
	reps, regs := startReplicas(t, url, ids, jobs, "0 0 1 1 *", func(string) func(context.Context) error {
		return func(context.Context) error { return nil }
	})
	waitFor(t, 20*time.Second, "each job followed by exactly 3 of 5 replicas", followedThrice(t, js, jobs))
	reps["r1"].stop()
	left := ids[1:]
	waitFor(t, 20*time.Second, "each job followed by exactly 3 of the 4 left", followedThrice(t, js, jobs))
	defer func() {
		if !t.Failed() {
			return
		}
		for _, id := range left {
			var line []string
			for i := range jobs {
				name := fmt.Sprintf("job%d", i)
				st, _ := reps[id].s.Job(name)
				v, ok := series(t, regs[id], "cronlock_job_suspended")[fmt.Sprintf("job=%q", name)]
				line = append(line, fmt.Sprintf("%s:%v/%v/%v", name, st.Suspended, v, ok))
			}
			t.Logf("%s: %v", id, line)
		}
	}()
	waitFor(t, 5*time.Second, "every job suspended on every replica left, reported by three", func() bool {
		for i := range jobs {
			name := fmt.Sprintf("job%d", i)
			reported := 0
			for _, id := range left {
				st, ok := reps[id].s.Job(name)
				if !ok || !st.Suspended {
					return false
				}
				v, ok := series(t, regs[id], "cronlock_job_suspended")[fmt.Sprintf("job=%q", name)]
				if ok && v != 1 {
					return false
				}
				if ok {
					reported++
				}
			}
			if reported != 3 {
				return false
			}
		}
		return true
	})
}

// A replica that stops following a job stops reporting the job's last
// success: three replicas follow and report every job, a fourth joins, and
// each job's record is then followed by three of the four; the replica
// that let a job go drops its series, the three followers keep theirs.
func TestUnfollowedJobDropsItsGauges(t *testing.T) {
	t.Parallel()
	const jobs = 8
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	noop := func(string) func(context.Context) error { return func(context.Context) error { return nil } }
	ids := []string{"r1", "r2", "r3"}
	_, regs := startReplicas(t, url, ids, jobs, "* * * * * *", noop)
	waitFor(t, 15*time.Second, "every job's last success on the three replicas", func() bool {
		for i := range jobs {
			for _, id := range ids {
				if !reportsLastSuccess(t, regs[id], fmt.Sprintf("job%d", i)) {
					return false
				}
			}
		}
		return true
	})

	_, more := startReplicas(t, url, []string{"r4"}, jobs, "* * * * * *", noop)
	regs["r4"] = more["r4"]
	ids = append(ids, "r4")
	_, js := natstest.Connect(t, url)
	waitFor(t, 20*time.Second, "each job followed by exactly 3 of the 4 replicas", followedThrice(t, js, jobs))
	waitFor(t, 15*time.Second, "every job skipped by exactly one replica as not a follower", func() bool {
		for i := range jobs {
			if len(notFollowers(t, regs, ids, fmt.Sprintf("job%d", i))) != 1 {
				return false
			}
		}
		return true
	})
	letGo := 0 // jobs that one of the first three replicas stopped following
	for i := range jobs {
		name := fmt.Sprintf("job%d", i)
		other := notFollowers(t, regs, ids, name)[0]
		if other != "r4" {
			letGo++
		}
		waitFor(t, 5*time.Second, name+": reported by its followers only", func() bool {
			for _, id := range ids {
				if reportsLastSuccess(t, regs[id], name) == (id == other) {
					return false
				}
			}
			return true
		})
	}
	if letGo == 0 {
		t.Fatal("no job moved off r1–r3: the drop was not exercised")
	}
}
