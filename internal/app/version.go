package app

import "runtime/debug"

// version is set at link time: -ldflags "-X github.com/cronlock/cronlock/internal/app.version=v1.2.3".
var version = ""

// Version is cronlock's version: the one set at link time, else the module
// version recorded by `go install`, else the VCS revision the binary was
// built from, else "devel".
func Version() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev := vcsRevision(bi)
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if vcsModified(bi) {
		rev += "-dirty"
	}
	return "devel-" + rev
}

// Revision is the VCS revision (commit) the binary was built from, as the Go
// toolchain records it, with "-dirty" when the work tree had changes; or
// "unknown" when the build has no VCS information (go run, go test, a build
// outside a repository or with -buildvcs=false).
func Revision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev := vcsRevision(bi)
	if rev == "" {
		return "unknown"
	}
	if vcsModified(bi) {
		rev += "-dirty"
	}
	return rev
}

func vcsRevision(bi *debug.BuildInfo) string { return setting(bi, "vcs.revision") }

func vcsModified(bi *debug.BuildInfo) bool { return setting(bi, "vcs.modified") == "true" }

func setting(bi *debug.BuildInfo, key string) string {
	for _, s := range bi.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}
