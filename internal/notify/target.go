package notify

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cronlock/cronlock/internal/config"
)

// target is one configured destination and the events it subscribes to.
type target struct {
	on   []string
	send sender
}

// sender delivers one notification. It is declared here, by its only
// consumer; webhook and command implement it.
type sender interface {
	// send makes one attempt, bounded by ctx. retry reports whether a
	// failed attempt may succeed when repeated.
	send(ctx context.Context, d delivery) (retry bool, err error)
	// String describes the destination for logs without secrets.
	String() string
}

func (t target) fires(event string) bool { return slices.Contains(t.on, event) }

func (t target) String() string { return t.send.String() }

// newTarget builds a target from its configuration, defaulting On like the
// config decoder does.
func newTarget(c config.NotifyTarget, opts Options) (target, error) {
	t := target{on: c.On}
	if t.on == nil {
		t.on = config.DefaultNotifyOn
	}
	switch {
	case c.Webhook != "" && len(c.Command) > 0:
		return target{}, errors.New("webhook and command are mutually exclusive")
	case c.Webhook != "":
		w, err := newWebhook(c, opts.Client)
		if err != nil {
			return target{}, err
		}
		t.send = w
	case len(c.Command) > 0 && c.Command[0] != "":
		t.send = newCommand(c.Command, c.Dir)
	default:
		return target{}, fmt.Errorf("one of webhook or command is required")
	}
	return t, nil
}
