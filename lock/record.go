package lock

import (
	"encoding/json"
	"fmt"
	"time"
)

// record is the JSON value of a held key, readable with `nats kv get`.
type record struct {
	Owner string `json:"owner"`
	// Lease identifies one Acquire call. The owner id is only a label,
	// shared by every caller in a process; Lease lets a client recognise its
	// own write after a lost reply.
	Lease string `json:"lease"`
	// Token is the fencing token: the revision of the write that acquired
	// the key. It is 0 in that first write (its revision is not known before
	// the server stores it) and set in every renewal.
	Token      uint64    `json:"token,omitempty"`
	AcquiredAt time.Time `json:"acquired_at"`
	// ExpiresAt is the writer's estimate, for people. The server's per-key
	// TTL decides expiry.
	ExpiresAt time.Time `json:"expires_at"`
}

func (r record) encode() []byte {
	b, _ := json.Marshal(r) // a struct of strings, ints and times cannot fail
	return b
}

// decodeRecord parses a key's value. It never panics on foreign data: a value
// that is not a lock record is an error, and the key is then reported as held
// by an unknown owner rather than treated as free.
func decodeRecord(data []byte) (record, error) {
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return record{}, fmt.Errorf("lock: value is not a lock record: %w", err)
	}
	if r.Lease == "" {
		return record{}, fmt.Errorf("lock: value is not a lock record: no lease id")
	}
	return r, nil
}
