// Package config decodes and validates the cronlock YAML configuration file.
//
// Decoding is strict: unknown keys, duplicate keys, values of the wrong YAML
// type, bad durations, time zones and cron specs, and contradictory settings
// are all errors. Every problem found in a file is reported at once, one per
// line and sorted by line, as
//
//	file:line: field.path: message
//
// for example
//
//	cronlock.yaml:14: jobs[1].schedule: schedule "0 61 * * * *": end of range (61) above maximum (59): 61
//	cronlock.yaml:9: lock.renew: must be less than lock.lease (renew 30s, lease 20s)
//
// Job indexes in paths are zero-based; YAML syntax errors have no path. A
// check that depends on a value that already has an error stays quiet, so
// one mistake gives one message. See [FieldError].
//
// The file is taken literally:
//
//   - ${VAR} and $VAR are NOT expanded anywhere. Keep secrets out of the file:
//     use nats.creds_file or nats.nkey_file, and the x_file key of every
//     other secret x (http.admin_token_file, notify[].secret_file, ...).
//   - YAML anchors, aliases, merge keys (<<) and tags (!!str) are rejected, so
//     that what you read is what runs and every error has one location.
//   - Scalars are not converted between types: a string field given 0755 or
//     true is an error ("quote the value"), an integer field given "2" or 2.5
//     is an error, a duration must be a Go duration string such as "20s".
//   - A key whose value is empty (null) is treated exactly as if it were
//     absent: the default applies.
//
// Secrets (nats.token, nats.password, http.admin_token, http.read_token,
// notify secrets and headers) are of type [Secret], and each can be read
// from a file instead (x_file, see secretfile.go); they never appear
// in errors returned by this package or in the fmt, JSON or YAML rendering of
// a [Config].
//
// It owns the file format: keys, defaults, validation and where each error
// is. It must not know how the settings are used (that is internal/app's),
// and it does not touch NATS, files other than the one it reads and the
// secret files it names (the *_file keys, see secretfile.go), or time.
package config

import (
	"crypto/sha256"
	"time"

	"github.com/cronlock/cronlock/job"

	// Job time zones are resolved here; embed the tz database so that
	// time zone names work on hosts and containers without /usr/share/zoneinfo.
	_ "time/tzdata"
)

// Config is a decoded and validated cronlock configuration file. A Config
// returned by Load or Parse has passed every check documented on its fields;
// keys absent from the file hold their documented defaults.
type Config struct {
	NATS    NATS    `yaml:"nats"`
	Lock    Lock    `yaml:"lock"`
	History History `yaml:"history"`
	HTTP    HTTP    `yaml:"http"`
	Log     Log     `yaml:"log"`
	// ShutdownGrace is how long cronlock waits for running jobs after a
	// shutdown signal. Default 30s; >= 0.
	ShutdownGrace Duration `yaml:"shutdown_grace"`
	// MaxConcurrentRuns bounds how many jobs this replica runs at once; at
	// the limit it leaves ticks to other replicas. Default 0: no limit.
	MaxConcurrentRuns int `yaml:"max_concurrent_runs"`
	// ConfigWatch makes `cronlock run` watch the configuration file and
	// reload it on every change, exactly as on SIGHUP. Default true; false
	// leaves reloads to SIGHUP.
	ConfigWatch bool `yaml:"config_watch"`
	// Notify lists the failure notification targets every job inherits
	// unless it has its own notify key. Nil when absent. See NotifyTarget.
	Notify []NotifyTarget `yaml:"notify"`
	// Jobs holds at least one job, in file order, with unique names.
	Jobs []Job `yaml:"jobs"`
	// Path is the file name given to Load or Parse. It is not a YAML key.
	Path string `yaml:"-"`
	// Digest is the SHA-256 of the bytes Parse decoded, so that a watcher
	// can tell the file on disk is the one in effect without decoding it
	// again (a second parse of a 100,000-job file costs seconds and
	// hundreds of MB). It is not a YAML key.
	Digest [sha256.Size]byte `yaml:"-"`

	// Deployment names this deployment (its replicas and their one
	// configuration) on a NATS account that others share: it becomes part
	// of every bucket name (see DeploymentBucket). Letters, digits, '_'
	// and '-', at most 64. Default "": the bucket names of releases
	// before the key.
	Deployment string `yaml:"deployment"`
	// Replicas says where the replicas announce themselves.
	Replicas Replicas `yaml:"replicas"`
	// Replica describes this replica (its labels), as it announces
	// itself; see placement.go.
	Replica Replica `yaml:"replica"`
	// RuntimeJobs configures the jobs defined at run time (runtime.go).
	RuntimeJobs RuntimeJobs `yaml:"runtime_jobs"`
	// Kinds are the named commands that jobs run by naming them (kind:).
	Kinds []Kind `yaml:"kinds"`
	// Groups are the cluster-wide concurrency groups that jobs name
	// (group:), by name.
	Groups map[string]Group `yaml:"groups"`
}

// NATS says how to reach NATS JetStream.
type NATS struct {
	// URL is the NATS server URL (or comma-separated URLs). Empty (the
	// default) means: start an embedded NATS server with JetStream in-process.
	URL string `yaml:"url"`
	// Embedded configures the in-process server; used only when URL is empty.
	Embedded Embedded `yaml:"embedded"`
	// Name is the NATS client connection name. Default "cronlock".
	Name string `yaml:"name"`
	// At most one authentication method may be set: CredsFile, NKeyFile,
	// Token, or User together with Password.
	CredsFile string `yaml:"creds_file"`
	NKeyFile  string `yaml:"nkey_file"`
	Token     Secret `yaml:"token"`
	User      string `yaml:"user"`
	Password  Secret `yaml:"password"`
	// TokenFile and PasswordFile name files holding Token and Password
	// (see the *_file convention in secretfile.go); each excludes its key.
	TokenFile    string `yaml:"token_file"`
	PasswordFile string `yaml:"password_file"`
	TLS          TLS    `yaml:"tls"`
	// InboxPrefix is the subject prefix of the client's reply subjects
	// (request replies and watch deliveries), e.g. "_INBOX_cronlock". Empty
	// (the default) means NATS' "_INBOX": a restricted user then needs
	// subscribe permission on "_INBOX.>", which every user's replies share.
	// Tokens of letters, digits, '_', '-' and '$' separated by '.'.
	InboxPrefix string `yaml:"inbox_prefix"`
	// IgnoreDiscoveredServers keeps the client's server pool to the URLs
	// of URL: the addresses that cluster nodes advertise (often unreachable
	// from behind a proxy, a NAT or a Kubernetes service) are not added.
	// Default false.
	IgnoreDiscoveredServers bool `yaml:"ignore_discovered_servers"`
	// JetStream says where the JetStream API is; the zero value is the
	// account's own JetStream on the servers of URL.
	JetStream JetStream `yaml:"jetstream"`
}

// JetStream selects the JetStream that holds the buckets, for replicas that
// reach it through a leaf node. At most one of Domain and APIPrefix is set,
// and only together with NATS.URL.
type JetStream struct {
	// Domain is the JetStream domain of the servers holding the buckets
	// (the hub's jetstream.domain), e.g. "hub". Default "": the nearest
	// JetStream. Letters, digits, '_' and '-'.
	Domain string `yaml:"domain"`
	// APIPrefix replaces "$JS.API" as the JetStream API subject prefix,
	// for accounts that import a JetStream API under another subject.
	// Default "". Tokens separated by '.', no wildcards.
	APIPrefix string `yaml:"api_prefix"`
}

// Embedded configures the embedded NATS server.
type Embedded struct {
	// StoreDir is the JetStream storage directory. Default ".cronlock/nats";
	// must not be empty when the embedded server is used. Relative to the
	// file's folder, like every path key (see resolvePaths).
	StoreDir string `yaml:"store_dir"`
	// Listen is a host:port on which the embedded server also accepts
	// clients, so that other replicas on this host can share it. Empty (the
	// default) means in-process connections only.
	Listen string `yaml:"listen"`
	// ServerName is the embedded server's NATS server name, unique in a
	// cluster: JetStream tells the nodes apart by it, so it must stay the
	// same across restarts of a node. Letters, digits, '_', '-' and '.'.
	// Empty (the default): "cronlock-embedded" without Cluster, else
	// "<host name>-<port of cluster.listen>", which is unique for nodes on
	// different hosts and for nodes on one host alike.
	ServerName string `yaml:"server_name"`
	// Cluster makes the embedded server one node of a JetStream cluster of
	// cronlock processes. The zero value (the default) is a single node.
	Cluster Cluster `yaml:"cluster"`
	// Auth is what clients of the embedded server must present. Required
	// when Listen's host is not a loopback address; see EmbeddedAuth.
	Auth EmbeddedAuth `yaml:"auth"`
}

// Cluster configures the embedded server as a node of a NATS cluster formed
// with NATS's own routes and JetStream clustering (RAFT): every cronlock
// process runs one node, and the buckets are replicated across them. It is
// in use when Listen or Routes is set; then Listen and at least two Routes
// are required (a JetStream cluster survives the loss of one node from
// three), and nats.url must be empty.
type Cluster struct {
	// Name is the cluster's name, the same on every node. Letters, digits,
	// '_', '-' and '.'. Default DefaultClusterName ("cronlock") when the
	// cluster is in use.
	Name string `yaml:"name"`
	// Listen is the host:port on which this node accepts routes from the
	// other nodes, e.g. "0.0.0.0:6222"; a fixed port (not 0). Default "".
	Listen string `yaml:"listen"`
	// Routes are the route URLs of the other nodes (their Listen), e.g.
	// "nats://10.0.0.2:6222"; scheme nats or nats-route. Listing this node
	// too does no harm (NATS ignores a route to itself) but counts as a
	// node for Lock.Replicas' default. Nil when absent.
	Routes []string `yaml:"routes"`
}

// TLS holds client TLS settings for NATS. CertFile and KeyFile are both set
// or both empty. All empty (the default) means no client TLS configuration.
type TLS struct {
	CAFile   string `yaml:"ca_file"`
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName is the name the server's certificate must carry, when it
	// differs from the host of the URL (servers reached by IP address or
	// through a proxy). Setting it turns TLS on. Default "": the URL's host.
	ServerName string `yaml:"server_name"`
}

// Lock configures the NATS KV lock that makes each tick run once.
type Lock struct {
	// Bucket is the KV bucket name ([A-Za-z0-9_-]+). Absent or "": "locks",
	// or "cronlock_<deployment>_locks" with Config.Deployment set.
	Bucket string `yaml:"bucket"`
	// Lease is the lock TTL: a whole number of seconds, >= 1s. Default 20s.
	Lease Duration `yaml:"lease"`
	// Renew is how often a held lock is renewed: > 0 and < Lease. Default 10s.
	Renew Duration `yaml:"renew"`
	// RetryBase and RetryMax bound the (jittered, exponential) backoff
	// between acquire attempts: 0 < RetryBase <= RetryMax. Defaults 50ms and
	// 500ms.
	RetryBase Duration `yaml:"retry_base"`
	RetryMax  Duration `yaml:"retry_max"`
	// AcquireTimeout is how long a replica keeps trying to take the lock
	// for one tick. Default 500ms; > 0.
	AcquireTimeout Duration `yaml:"acquire_timeout"`
	// Replicas is the KV bucket replication factor, 1..5, of the buckets
	// cronlock creates (lock, history, replicas). Default 1; with
	// nats.embedded.cluster of 3 or more nodes, 3 (ClusterReplicas). With
	// the embedded server it cannot exceed the number of nodes.
	Replicas int `yaml:"replicas"`
	// Owner identifies this replica in the lock. Empty (the default) means
	// the library default (host:pid).
	Owner string `yaml:"owner"`
}

// History configures the shared run history kept per job.
type History struct {
	// Bucket is the KV bucket name ([A-Za-z0-9_-]+), different from
	// Lock.Bucket. Absent or "": "cronlock_history", or
	// "cronlock_<deployment>_history" with Config.Deployment set.
	Bucket string `yaml:"bucket"`
	// Size is the number of runs kept per job, 1..64 (the NATS KV per-key
	// history limit). Default 20.
	Size int `yaml:"size"`
	// OutputTail is how many bytes of each run's combined stdout and
	// stderr the history keeps (the last ones, cut on a UTF-8 boundary),
	// 0..262144. Default 4096; 0 keeps none.
	OutputTail int `yaml:"output_tail"`
}

// MinAdminTokenLength keeps http.admin_token out of reach of guessing: 16
// random characters are far beyond what an attacker can try over HTTP.
const MinAdminTokenLength = 16

// HTTP configures the HTTP server: the status page at /, its JSON API under
// /api/, /metrics, /healthz and /readyz.
type HTTP struct {
	// Listen is a host:port, or empty to disable the server. Default
	// DefaultHTTPListen, "127.0.0.1:8736", only when the http key is absent
	// from the file: once an http section is written, an omitted listen
	// means disabled.
	Listen string `yaml:"listen"`
	// MetricsListen, TLS, AllowedHosts, the timeouts and MaxConnections
	// protect the listeners: see HTTPTransport's fields in http.go.
	HTTPTransport `yaml:",inline"`
	// AdminToken enables the status page's actions (trigger, suspend,
	// resume); requests must send it as "Authorization: Bearer <token>".
	// Empty (the default): the page is read-only. When set it is at least
	// MinAdminTokenLength characters of visible ASCII (no spaces: it goes
	// into an HTTP header) and needs http.listen.
	AdminToken Secret `yaml:"admin_token"`
	// AdminTokenFile names a file holding AdminToken (the *_file
	// convention, see secretfile.go). Default "".
	AdminTokenFile string `yaml:"admin_token_file"`
	// ReadToken, when set, closes the status page, /api/ and /metrics to
	// requests without it (or the admin token): "Authorization: Bearer
	// <token>", or the cookie the page's login form sets. /healthz and
	// /readyz stay open. Same rules as AdminToken. Default "": open.
	ReadToken Secret `yaml:"read_token"`
	// ReadTokenFile names a file holding ReadToken. Default "".
	ReadTokenFile string `yaml:"read_token_file"`
}

// Log configures logging.
type Log struct {
	// Level is debug, info, warn or error. Default info.
	Level string `yaml:"level"`
	// Format is json or console. Default json.
	Format string `yaml:"format"`
	// OutputLinesPerSecond and OutputBytesPerSecond are each run's log
	// budget for its output (both streams together); lines over it are
	// not logged but counted in a "[... N lines not logged]" line, and
	// the history's output tail keeps them. Defaults 100 lines and 64 KiB
	// a second; 0 means the same (see proc.Command).
	OutputLinesPerSecond int `yaml:"output_lines_per_second"`
	OutputBytesPerSecond int `yaml:"output_bytes_per_second"`
}

// Job is one scheduled command.
type Job struct {
	// Name is unique in the file and valid for job.ValidateName.
	Name string `yaml:"name"`
	// Schedule is a cron spec accepted by job.ParseSchedule (with Location).
	Schedule string `yaml:"schedule"`
	// Schedules, instead of Schedule, is a non-empty list of cron specs
	// (each as Schedule): the job runs at their union, once at a time
	// several share. At most job.MaxSchedules.
	Schedules []string `yaml:"schedules"`
	// Timezone is an IANA time zone name; empty means UTC, so that replicas
	// on hosts with different local time zones agree on every tick. "Local"
	// is accepted and means the host's zone.
	Timezone string `yaml:"timezone"`
	// ExcludeDates are days without ticks, "YYYY-MM-DD" in Timezone. At
	// most job.MaxExcludeDates. Resolved in Cal.
	ExcludeDates []string `yaml:"exclude_dates"`
	// StartAt and EndAt are RFC 3339 times: no tick before StartAt or after
	// EndAt (a tick at either is one); EndAt is after StartAt. A job past
	// its EndAt is valid and has no next tick. Resolved in Cal.
	StartAt string `yaml:"start_at"`
	EndAt   string `yaml:"end_at"`
	// At, instead of Schedule or Schedules, is an RFC 3339 time: the job's
	// only run (a one-off). It takes no StartAt, EndAt or ExcludeDates;
	// past it the job is valid and has no next run. Resolved in Cal.
	At string `yaml:"at"`
	// AfterRun is what becomes of a one-off's definition after its run:
	// "" or AfterRunKeep for a file job (AfterRunDelete is for runtime
	// jobs). Only valid with At.
	AfterRun string `yaml:"after_run"`
	// Exactly one of Command and Shell is set. Command is an argv (non-empty,
	// Command[0] non-empty) run without a shell; Shell is a non-empty shell
	// command line.
	Command []string `yaml:"command"`
	Shell   string   `yaml:"shell"`
	// Env holds extra environment variables; names are non-empty and
	// contain no '=' or NUL. Nil when absent.
	Env map[string]string `yaml:"env"`
	// Dir is the working directory, relative to the file's folder; empty
	// means cronlock's own.
	Dir string `yaml:"dir"`
	// Timeout bounds one attempt; 0 (the default) means no timeout. >= 0.
	Timeout Duration `yaml:"timeout"`
	// Retries is how many times a failed run is retried. Default 0; >= 0.
	Retries int `yaml:"retries"`
	// RetryBackoff is the pause between attempts. Default 0; >= 0.
	RetryBackoff Duration `yaml:"retry_backoff"`
	// StartingDeadline is the catch-up window: at start-up, and when a
	// replica regains NATS after an outage, the latest tick that no replica
	// ran is run once if it is at most this old. 0 (the default) means no
	// catch-up. >= 0.
	StartingDeadline Duration `yaml:"starting_deadline"`
	// OnInterrupt is what happens to a tick whose run a shutdown (after
	// shutdown_grace) or a lost lock interrupted: "skip" (the default) leaves
	// it; "rerun" runs it again on the next replica that takes the lock,
	// until the job's next tick is due; the third interruption of a tick is
	// recorded failed (so a tick is rerun at most twice).
	OnInterrupt string `yaml:"on_interrupt"`
	// Suspended makes every replica skip the job's ticks (recorded as
	// skipped), whatever `cronlock resume` says. Default false.
	Suspended bool `yaml:"suspended"`
	// SuspendAfterFailures suspends the job for every replica after this
	// many consecutive failed runs (failed, timeout, lost, abandoned), with
	// the note "suspended after N consecutive failures" and a "suspended"
	// notification. 0 (the default): never. >= 0.
	SuspendAfterFailures int `yaml:"suspend_after_failures"`
	// Overlap is what a tick that comes while the job runs does: "skip"
	// (the default) is missed with reason overlap; "queue" runs as soon as
	// the run ends (the latest such tick; older ones are missed, overlap);
	// "replace" cancels the running run (recorded cancelled, reason
	// replaced) and runs once it is gone; "allow" starts it while earlier
	// runs still run, up to max_parallel at once across all replicas.
	Overlap string `yaml:"overlap"`
	// MaxParallel bounds the runs at once under overlap allow. Default 1;
	// 1 to 1000; above 1 only with overlap allow.
	MaxParallel int `yaml:"max_parallel"`
	// Group names a concurrency group of Config.Groups: at most its
	// max_running runs of its jobs at once across all replicas. A tick that
	// finds it full waits for a slot until starting_deadline after the tick
	// (not at all without one), then is missed with reason group_full.
	Group string `yaml:"group"`
	// GroupMaxRunning is the group's max_running, set by validation.
	GroupMaxRunning int `yaml:"-"`
	// RunOn is "one" (the default: each tick runs on one replica) or
	// "every_replica": each live replica (matching on_replicas) runs each
	// tick itself, for host-local work.
	RunOn string `yaml:"run_on"`
	// OnReplicas, when set, restricts the job to the replicas whose
	// replica.labels have every one of its pairs; a tick at which none is
	// live is missed with reason no_replica. Nil when absent.
	OnReplicas map[string]string `yaml:"on_replicas"`
	// Jitter delays each tick's run by up to this much, the same delay on
	// every replica for a given job and tick (a hash, not a random number),
	// to spread jobs that share a schedule. Default 0. >= 0.
	Jitter Duration `yaml:"jitter"`
	// Grace is the time between SIGTERM and SIGKILL when a run must stop.
	// Default 10s; >= 0.
	Grace Duration `yaml:"grace"`
	// Notify, when the key is written, replaces Config.Notify for this job:
	// nil (key absent or null) inherits the top-level list, an explicit
	// empty list (notify: []) turns notifications off for the job. Use
	// Config.NotifyTargets for the resolved lists.
	Notify []NotifyTarget `yaml:"notify"`
	// Kind, instead of Command or Shell, names a kind of Config.Kinds:
	// the job runs its command (resolved into Command, Shell, Env and
	// Dir by validation). Payload is a JSON object the runs receive as
	// CRONLOCK_PAYLOAD. Both are what a runtime job is made of.
	Kind    string  `yaml:"kind"`
	Payload Payload `yaml:"payload"`

	// Location is Timezone resolved; never nil in a validated Config.
	Location *time.Location `yaml:"-"`
	// Cal is Schedules, ExcludeDates, StartAt, EndAt and At resolved; nil when
	// the job sets none of them (most jobs: 8 bytes each, not 96).
	Cal *job.Calendar `yaml:"-"`
	// Line is the 1-based line of the job's entry in the file.
	Line int `yaml:"-"`
}

// Defaults for keys absent from the file.
const (
	DefaultNATSName       = "cronlock"
	DefaultStoreDir       = ".cronlock/nats"
	DefaultLockBucket     = "locks"
	DefaultLease          = Duration(20 * time.Second)
	DefaultRenew          = Duration(10 * time.Second)
	DefaultRetryBase      = Duration(50 * time.Millisecond)
	DefaultRetryMax       = Duration(500 * time.Millisecond)
	DefaultAcquireTimeout = Duration(500 * time.Millisecond)
	DefaultReplicas       = 1
	DefaultHistoryBucket  = "cronlock_history"
	DefaultHistorySize    = 20
	DefaultOutputTail     = 4096
	// DefaultHTTPListen is off 9090, the Prometheus server's own port, and
	// off 9091-9094 and 9100-9999, which the Prometheus project's "default
	// port allocations" list gives to its components and to exporters:
	// cronlock must not collide with an exporter on the same host.
	DefaultHTTPListen    = "127.0.0.1:8736"
	DefaultLogLevel      = "info"
	DefaultLogFormat     = "json"
	DefaultShutdownGrace = Duration(30 * time.Second)
	DefaultJobGrace      = Duration(10 * time.Second)
	DefaultConfigWatch   = true
)

// defaults returns a Config holding every default except HTTP.Listen, which
// depends on whether the http key is present.
func defaults() Config {
	return Config{
		NATS: NATS{
			Name:     DefaultNATSName,
			Embedded: Embedded{StoreDir: DefaultStoreDir},
		},
		Lock: Lock{
			Bucket:         DefaultLockBucket,
			Lease:          DefaultLease,
			Renew:          DefaultRenew,
			RetryBase:      DefaultRetryBase,
			RetryMax:       DefaultRetryMax,
			AcquireTimeout: DefaultAcquireTimeout,
			Replicas:       DefaultReplicas,
		},
		History: History{Bucket: DefaultHistoryBucket, Size: DefaultHistorySize, OutputTail: DefaultOutputTail},
		HTTP:    HTTP{HTTPTransport: defaultHTTPTransport()},
		Log: Log{Level: DefaultLogLevel, Format: DefaultLogFormat,
			OutputLinesPerSecond: DefaultOutputLinesPerSecond, OutputBytesPerSecond: DefaultOutputBytesPerSecond},
		ShutdownGrace: DefaultShutdownGrace,
		ConfigWatch:   DefaultConfigWatch,
		RuntimeJobs:   RuntimeJobs{MaxJobs: DefaultMaxRuntimeJobs},
	}
}

// Load reads the file at path with ReadFile and returns Parse(path,
// contents).
func Load(path string) (*Config, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes and validates data, the contents of the file filename
// (used in error messages, as Config.Path, and to resolve relative paths:
// see resolvePaths).
//
// On success the returned Config is fully validated and has at least one job.
// On failure it returns a nil Config and an error joining (errors.Join) one
// *FieldError per problem, sorted by line; errors.As finds the first.
func Parse(filename string, data []byte) (*Config, error) {
	cfg, err := parseWith(newDecoder(filename, data))
	if testParseHook != nil {
		testParseHook(filename, data, cfg, err)
	}
	if cfg != nil {
		cfg.Digest = sha256.Sum256(data)
	}
	return cfg, err
}

// testParseHook, set only by this package's tests, sees every result of
// Parse: they check that the job stream gives what decoding the file whole
// gives (jobstream_test.go).
var testParseHook func(filename string, data []byte, cfg *Config, err error)

// parseWith is Parse with the decoder d of the file.
func parseWith(d *decoder) (*Config, error) {
	filename := d.file
	cfg := d.decode()
	if cfg != nil {
		d.readSecretFiles(cfg)
		d.validate(cfg)
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	cfg.Path = filename
	cfg.resolvePaths(configDir(filename))
	return cfg, nil
}
