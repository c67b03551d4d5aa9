package config

// A deployment is one set of replicas running one configuration. Several
// deployments can share a NATS account: each one names itself (the
// deployment key) and every bucket it uses gets the name in it, so that
// their locks, histories and replicas never meet. Without a name the
// buckets keep the names of releases before the key existed, so that an
// upgraded deployment finds its locks and history where they are.
//
// The naming rule, for deployment D:
//
//	lock.bucket      locks              -> cronlock_D_locks
//	history.bucket   cronlock_history   -> cronlock_D_history
//	replicas.bucket  cronlock_replicas  -> cronlock_D_replicas
//	(jobs bucket)    cronlock_jobs      -> cronlock_D_jobs
//
// A bucket name written in the file (non-empty) is used as it is, with or
// without a deployment.

// Replicas configures where the replicas announce themselves (the load
// spreading, `cronlock replicas`, the page's replica list).
type Replicas struct {
	// Bucket is the KV bucket name ([A-Za-z0-9_-]+), different from
	// lock.bucket and history.bucket. Absent or "": DefaultReplicasBucket,
	// or "cronlock_<deployment>_replicas" with Config.Deployment set.
	Bucket string `yaml:"bucket"`
}

// Bucket names without a deployment (see DeploymentBucket).
const (
	DefaultReplicasBucket = "cronlock_replicas"
	// DefaultJobsBucket is the bucket of jobs defined at run time, for the
	// release that adds them: see Config.JobsBucket.
	DefaultJobsBucket = "cronlock_jobs"
)

// Roles of the buckets, the last part of a deployment's bucket names.
const (
	roleLocks    = "locks"
	roleHistory  = "history"
	roleReplicas = "replicas"
	roleJobs     = "jobs"
)

// maxDeploymentLength keeps the bucket names (and the trigger subject
// cronlock.<history bucket>.trigger.<job>) short: a JetStream stream name
// is at most 255 bytes, and KV keys of long job names live in subjects
// that carry the bucket's name.
const maxDeploymentLength = 64

// DeploymentBucket is the name of deployment's bucket for role (locks,
// history, replicas, jobs): "cronlock_<deployment>_<role>". An empty
// deployment gives the names of releases before deployments existed:
// "locks", "cronlock_history", "cronlock_replicas", "cronlock_jobs".
func DeploymentBucket(deployment, role string) string {
	if deployment == "" {
		if role == roleLocks {
			return DefaultLockBucket
		}
		return "cronlock_" + role
	}
	return "cronlock_" + deployment + "_" + role
}

// JobsBucket is the bucket for jobs defined at run time (a later release's
// cronlock_jobs): named like the others after Deployment.
func (c *Config) JobsBucket() string { return DeploymentBucket(c.Deployment, roleJobs) }

// validateDeployment checks the deployment name and gives every bucket
// not written, or written "", its name (see DeploymentBucket). It runs before the buckets'
// own checks, which then see the names in use.
func (d *decoder) validateDeployment(c *Config) {
	dep := c.Deployment
	switch {
	case dep != "" && !bucketName.MatchString(dep):
		d.check(true, "deployment", nil, "invalid name %s: use letters, digits, '_' and '-' "+
			"(it becomes part of every bucket name, e.g. cronlock_<deployment>_locks)", quote(dep))
		dep = ""
	case len(dep) > maxDeploymentLength:
		d.check(true, "deployment", nil, "too long: at most %d characters, got %d", maxDeploymentLength, len(dep))
		dep = ""
	}
	for _, b := range []struct {
		path, role string
		name       *string
	}{
		{"lock.bucket", roleLocks, &c.Lock.Bucket},
		{"history.bucket", roleHistory, &c.History.Bucket},
		{"replicas.bucket", roleReplicas, &c.Replicas.Bucket},
		{"runtime_jobs.bucket", roleJobs, &c.RuntimeJobs.Bucket},
	} {
		if !d.set[b.path] || *b.name == "" {
			*b.name = DeploymentBucket(dep, b.role)
		}
	}
}

// validateReplicas checks replicas.bucket: a bucket name of its own.
func (d *decoder) validateReplicas(c *Config) {
	r := c.Replicas.Bucket
	d.checkBucket("replicas.bucket", r)
	for _, other := range []struct{ path, name string }{{"lock.bucket", c.Lock.Bucket}, {"history.bucket", c.History.Bucket}} {
		d.check(r == other.name, "replicas.bucket", []string{other.path},
			"must differ from %s (both are %s)", other.path, quote(r))
	}
}
