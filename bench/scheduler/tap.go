package main

import (
	"bytes"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
)

// tap subscribes to every subject and counts messages by kind, so the
// per-job-tick NATS traffic can be broken down into lock writes, reads,
// history operations, replies and watch deliveries. It doubles the server's
// outbound traffic: use it with few jobs.
type tap struct {
	nc  *nats.Conn
	mu  sync.Mutex
	n   map[string]int64
	sub *nats.Subscription
}

func startTap(url string) (*tap, error) {
	nc, err := nats.Connect(url, nats.Name("cronlock-bench-tap"))
	if err != nil {
		return nil, err
	}
	t := &tap{nc: nc, n: map[string]int64{}}
	t.sub, err = nc.Subscribe(">", func(m *nats.Msg) {
		k := classify(m)
		t.mu.Lock()
		t.n[k]++
		t.mu.Unlock()
	})
	if err != nil {
		nc.Close()
		return nil, err
	}
	t.sub.SetPendingLimits(-1, -1)
	if err := nc.Flush(); err != nil {
		nc.Close()
		return nil, err
	}
	return t, nil
}

func (t *tap) reset() {
	t.mu.Lock()
	t.n = map[string]int64{}
	t.mu.Unlock()
}

func (t *tap) snapshot() map[string]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int64, len(t.n))
	for k, v := range t.n {
		out[k] = v
	}
	return out
}

func (t *tap) close() { t.nc.Close() }

func tapPerJobTick(n map[string]int64, jobTicks int) map[string]float64 {
	if len(n) == 0 {
		return nil
	}
	out := map[string]float64{}
	var total int64
	for k, v := range n {
		out[k] = float64(v) / float64(max(jobTicks, 1))
		total += v
	}
	out["TOTAL"] = float64(total) / float64(max(jobTicks, 1))
	return out
}

// classify names a message's kind for the tap.
func classify(m *nats.Msg) string {
	s := m.Subject
	if strings.HasPrefix(m.Reply, "$JS.ACK.") {
		// A consumer delivery: it carries the stored message's subject.
		if strings.HasPrefix(s, "$KV.locks.") {
			return "watch delivery (headers only) to a Locker"
		}
		if strings.HasPrefix(s, "$KV.cronlock_history.") {
			return "watch delivery of the history (job states, holds)"
		}
		return "delivery other consumer"
	}
	switch {
	case strings.HasPrefix(s, "$KV.locks."):
		if op := m.Header.Get("KV-Operation"); op != "" {
			return "lock  publish " + op + " (release)"
		}
		return "lock  publish CAS write (acquire/renew)"
	case strings.HasPrefix(s, "$JS.API.STREAM.MSG.GET.KV_locks"):
		return "lock  request msg-get last (Locker.last)"
	case strings.HasPrefix(s, "$KV.cronlock_history."):
		return "hist  publish CAS write (claim+take / renew / result+free)"
	case strings.HasPrefix(s, "$JS.API.DIRECT.GET.KV_cronlock_history"):
		return "hist  request direct get"
	case strings.HasPrefix(s, "$JS.API.CONSUMER.MSG.NEXT."):
		return "watch request pull next"
	case strings.HasPrefix(s, "$JS.API."):
		f := strings.Split(s, ".")
		return "js    request " + strings.Join(f[2:min(len(f), 4)], ".")
	case strings.HasPrefix(s, "$JS.ACK."):
		return "watch ack"
	case strings.HasPrefix(s, "$JS.FC."):
		return "watch flow control"
	case strings.HasPrefix(s, "$JS.EVENT."):
		return "js    advisory"
	case strings.HasPrefix(s, "_INBOX.") || strings.HasPrefix(s, "$JS"):
		return classifyReply(m)
	}
	f := strings.SplitN(s, ".", 2)
	return "other " + f[0]
}

func classifyReply(m *nats.Msg) string {
	if st := m.Header.Get("Status"); st != "" {
		return "reply status " + st
	}
	if m.Header.Get("Nats-Stream") != "" {
		return "reply direct get " + m.Header.Get("Nats-Stream")
	}
	d := m.Data
	switch {
	case bytes.Contains(d, []byte(`"err_code":10071`)):
		return "reply CAS conflict (wrong last sequence)"
	case bytes.Contains(d, []byte(`"error"`)):
		return "reply JS error"
	case bytes.HasPrefix(d, []byte(`{"stream":"KV_locks"`)):
		return "reply pub ack locks"
	case bytes.HasPrefix(d, []byte(`{"stream":"KV_cronlock_history"`)):
		return "reply pub ack history"
	case bytes.Contains(d, []byte(`stream_msg_get_response`)):
		return "reply msg-get"
	}
	return "reply other"
}
