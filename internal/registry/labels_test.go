package registry

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

// The labels header carries a replica's labels to the headers-only watch:
// sorted pairs, none for no labels, and back.
func TestLabelsHeader(t *testing.T) {
	t.Parallel()
	labels := map[string]string{"zone": "eu-1", "role": "batch"}
	h := joinLabels(labels)
	if h != "role=batch,zone=eu-1" {
		t.Errorf("joinLabels = %q", h)
	}
	if got := splitLabels(h); !maps.Equal(got, labels) {
		t.Errorf("splitLabels(%q) = %v", h, got)
	}
	if joinLabels(nil) != "" || splitLabels("") != nil {
		t.Error("no labels must be no header, and back")
	}
	if got := splitLabels("role=batch,junk"); len(got) != 1 || got["role"] != "batch" {
		t.Errorf("a pair without '=' must be left out: %v", got)
	}
}

// The announcement's labels are an addition to its stored format, which
// older releases ignore: absent without labels (TestAnnouncementFormat).
func TestAnnouncementLabels(t *testing.T) {
	t.Parallel()
	data, err := json.Marshal(Replica{ID: "a", Labels: map[string]string{"zone": "eu-1", "role": "batch"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"labels":{"role":"batch","zone":"eu-1"}`) {
		t.Errorf("announcement %s: want its labels", data)
	}
}
