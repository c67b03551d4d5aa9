package chaos

import (
	"net/http"
	"testing"
)

func TestFence(t *testing.T) {
	f, err := NewFence()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	get := func(job, token string) int {
		resp, err := http.Get(f.URL() + "/touch?job=" + job + "&token=" + token + "&pid=7&replica=r1")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	steps := []struct {
		job, token string
		want       int
	}{
		{"a", "5", 200},
		{"a", "5", 200}, // the same holder writes again
		{"a", "7", 200},
		{"a", "5", 409}, // stale
		{"b", "1", 200}, // per job
		{"a", "x", 400},
	}
	for i, s := range steps {
		if got := get(s.job, s.token); got != s.want {
			t.Fatalf("step %d: %s token %s: got %d, want %d", i, s.job, s.token, got, s.want)
		}
	}
	log := f.Log()
	if len(log) != 5 || log[3].OK || log[3].Max != 7 || log[3].PID != 7 {
		t.Fatalf("log: %+v", log)
	}
}
