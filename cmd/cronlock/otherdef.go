package main

import (
	"fmt"
	"strings"

	"github.com/cronlock/cronlock/internal/app"
)

// writeOtherDefinitions notes under the status table each job whose last
// tick was claimed under another definition than this configuration's:
// the runs shown for it may not be this deployment's.
func writeOtherDefinitions(b *strings.Builder, hist []app.JobHistory) {
	for _, h := range hist {
		if h.OtherDefinition == "" {
			continue
		}
		fmt.Fprintf(b, "\n%s: its last tick was claimed by another definition of the job (%s, not %s): "+
			"another deployment on the same buckets, or replicas with another configuration; the runs shown may be theirs "+
			"(set a distinct deployment name, see PERMISSIONS.md \"Sharing a NATS account\")\n",
			h.Job.Name, h.OtherDefinition, app.DefinitionHash(h.Job))
	}
}
