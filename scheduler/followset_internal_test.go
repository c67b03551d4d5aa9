package scheduler

import (
	"fmt"
	"slices"
	"testing"
)

// followers: everyone up to three live replicas; beyond, three per job in
// live's order, about as many jobs for each replica, and a replica
// leaving moves only the jobs it followed, each to one other replica.
func TestFollowers(t *testing.T) {
	small := []string{"a", "b", "c"}
	if got := followers("job", small); !slices.Equal(got, small) {
		t.Errorf("followers among 3 = %v, want all of them", got)
	}
	var live []string
	for i := range 10 {
		live = append(live, fmt.Sprintf("r%d", i+1))
	}
	slices.Sort(live)
	const jobs = 3000
	before := map[string][]string{}
	count := map[string]int{}
	for i := range jobs {
		name := fmt.Sprintf("job%d", i)
		f := followers(name, live)
		if len(f) != followersPerJob || !slices.IsSortedFunc(f, func(a, b string) int { return slices.Index(live, a) - slices.Index(live, b) }) {
			t.Fatalf("followers(%s) = %v: want %d, in live's order", name, f, followersPerJob)
		}
		before[name] = f
		for _, id := range f {
			count[id]++
		}
	}
	for _, id := range live {
		// 900 expected (3000 × 3 / 10).
		if count[id] < 750 || count[id] > 1050 {
			t.Errorf("%s follows %d of %d jobs; want about 900 (%v)", id, count[id], jobs, count)
		}
	}
	gone := "r4"
	left := slices.DeleteFunc(slices.Clone(live), func(id string) bool { return id == gone })
	for name, was := range before {
		now := followers(name, left)
		if !slices.Contains(was, gone) {
			if !slices.Equal(now, was) {
				t.Errorf("%s: followers %v -> %v though %s did not follow it", name, was, now, gone)
			}
			continue
		}
		kept := 0
		for _, id := range was {
			if slices.Contains(now, id) {
				kept++
			}
		}
		if kept != followersPerJob-1 {
			t.Errorf("%s: followers %v -> %v; want the two others kept", name, was, now)
		}
	}
}

// BenchmarkFollowers: one job's followers among 10 live replicas, as the
// follow set computes it for every job at each change.
func BenchmarkFollowers(b *testing.B) {
	var live []string
	for i := range 10 {
		live = append(live, fmt.Sprintf("replica-%d", i))
	}
	for i := 0; b.Loop(); i++ {
		followers(fmt.Sprintf("job-%d", i%100000), live)
	}
}
