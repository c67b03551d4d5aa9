// Command floor measures the physical floor of cronlock's tick path on this
// machine: what the bare NATS operations of one job-tick cost, with no
// scheduler code, so that bench/scheduler's figures can be set against it.
//
//	go run ./bench/floor -clients 3 -jobs 100 -duration 20s
//	go run ./bench/floor -clients 3 -jobs 1000 -duration 10s -json
//	go run ./bench/floor -jobs 1000 -cpuprofile /tmp/floor.cpu -server-cpuprofile /tmp/floor.server.cpu
//
// cronlock's tick path per job-tick is: the replica dealt the tick writes
// the job's record with a compare-and-swap (the claim), runs the job, and
// writes it again with a compare-and-swap (the result); every replica
// follows the bucket with a headers-only ordered consumer over every key
// (DeliverLastPerSubject), so each write is delivered to every replica. The
// floor per job-tick is therefore 2 stored writes (2 messages in, 2 acks
// out) and up to 2 × N deliveries: 8 messages out at 3 replicas. Up to:
// the bucket keeps one message per key (history 1, as cronlock's), and a
// consumer skips a message the stream removed before the consumer got to
// it, so a claim that the result replaced within the delivery latency is
// not delivered (only the result is). With the result written right after
// the claim's ack, and no job in between, that happens here more often
// than in cronlock; the deliveries per client per job-tick (between 1 and
// 2) are reported.
//
// The parent process starts an embedded nats-server (JetStream, file store
// in a temp dir, loopback), creates the bucket "floor" with internal/kv
// (history 1) and writes every key once, so the clients start from records
// that exist as cronlock's do. It then re-executes itself as -clients
// client processes. Each client connects, opens the bucket with kv.Open
// and follows it with kv.Bucket.Follow, the call the scheduler uses to
// follow every record (a headers-only ordered consumer over ">"), keeping
// each key's last known revision from its own acks and its follow's
// deliveries. After the handshake (READY, then GO <start> <end> in Unix
// nanoseconds) every client, at each whole second t in [start, end), for
// each key floor.job-NNNN that fnv32a(key + decimal Unix second) % N deals
// it, does a kv.Bucket.Put with the last revision it knows (the claim: a
// -value byte value and about 300 bytes of cronlock-like headers), then
// at once a second Put with the revision of the claim's ack (the result).
// A conflict is counted, the revision read again and the write retried
// once; there should be none. The keys of one second run one goroutine
// each (no pool: a goroutine start is cheaper than a hand-off through a
// channel, and the count is bounded by -jobs / N per client per second).
// With -batch one goroutine sends all of a client's claims of the second
// as asynchronous publishes, waits for their acks, then sends the results
// the same way (a conflict drops the key's tick, without a retry). The
// NATS client then coalesces the burst into a few socket writes, where a
// goroutine per key has its every publish flushed in a write of its own:
// that measures what batching would save below this floor.
//
// CPU is getrusage(RUSAGE_SELF) of each process over the measured window
// [start − 20 ms, end] (a client's ends once its last tick's writes are
// acked); the parent's is the nats-server's, as the parent does nothing
// else in the window. The server's messages in and out come from its Varz
// (also without the parent's own connection), each client's from
// nc.Stats(), the stored writes from the stream's last sequence.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

// config is one benchmark run.
type config struct {
	Clients    int           `json:"clients"`
	Jobs       int           `json:"jobs"`
	Duration   time.Duration `json:"duration"`
	Value      int           `json:"value_bytes"`
	Batch      bool          `json:"batch"`
	CPUProfile string        `json:"-"` // client profiles: <CPUProfile>.<index>
	ServerProf string        `json:"-"` // parent (nats-server) CPU profile

	exe    string    // binary to re-execute as a client
	stderr io.Writer // progress and clients' stderr
}

func main() {
	if os.Getenv(clientEnv) != "" {
		clientMain()
		return
	}
	os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr))
}

func cli(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var jsonOut bool
	fs.IntVar(&c.Clients, "clients", 3, "number of client processes (the replicas N): each follows the bucket; client fnv32a(key+second) % N writes the tick")
	fs.IntVar(&c.Jobs, "jobs", 100, "keys (floor.job-0000, …) written every second: job-ticks per second")
	fs.DurationVar(&c.Duration, "duration", 20*time.Second, "measured window, from a whole second a little after the clients are ready (one tick per key per second)")
	fs.IntVar(&c.Value, "value", 4096, "bytes of each write's value (plus about 300 bytes of headers)")
	fs.BoolVar(&c.Batch, "batch", false, "send a second's dealt claims from one goroutine as asynchronous publishes, wait for their acks, then their results the same way: the burst's writes coalesced into few socket writes")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write each client's CPU profile (over the window) to `file`.<index>")
	fs.StringVar(&c.ServerProf, "server-cpuprofile", "", "write the parent's (nats-server's) CPU profile over the window to `file`")
	fs.BoolVar(&jsonOut, "json", false, "print the result as JSON on stdout after the summary")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: go run ./bench/floor [flags]\n\n"+
			"Floor of cronlock's tick path without scheduler code: every second, for each of\n"+
			"-jobs keys, the client dealt the tick does two compare-and-swap writes (claim,\n"+
			"result) while -clients processes follow the bucket (headers only); reports CPU\n"+
			"and NATS messages per job-tick.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected arguments: %q\n", fs.Args())
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	c.exe, c.stderr = exe, stderr
	res, err := bench(context.Background(), c)
	if res != nil {
		printSummary(stdout, res)
		if jsonOut {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			enc.Encode(res)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if !res.OK {
		return 1
	}
	return 0
}
