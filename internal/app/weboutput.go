package app

import (
	"context"
	"strings"

	"github.com/cronlock/cronlock/internal/liveout"
	"github.com/cronlock/cronlock/internal/web"
)

// FollowOutput follows the live output of a job of the configuration in
// effect or a scheduled runtime job, for the page (web.Output). The
// channel closes when ctx is done or the daemon stops scheduling, so that
// an open stream does not hold up the HTTP server's shutdown.
func (s *webSource) FollowOutput(ctx context.Context, name string) (<-chan web.OutputEvent, error) {
	st, err := s.known(ctx, name)
	if err != nil {
		return nil, err
	}
	f, err := followOutput(ctx, s.d.conn.Load().NC, OutputSubject(st.cfg, name))
	if err != nil {
		return nil, err
	}
	ch := make(chan web.OutputEvent)
	go func() {
		defer close(ch)
		defer f.Stop()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(s.d.schedCtx, cancel)()
		for {
			e, err := f.Next(ctx)
			if err != nil {
				return
			}
			select {
			case ch <- webOutputEvent(e):
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}

// webOutputEvent is e as the page's stream carries it.
func webOutputEvent(e liveout.Event) web.OutputEvent {
	return web.OutputEvent{
		Owner: e.Run.Owner, Tick: e.Run.Tick, Token: e.Run.Token, Attempt: e.Run.Attempt, Seq: e.Seq,
		Data: strings.ToValidUTF8(string(e.Data), "\uFFFD"), Dropped: e.Dropped, Lost: e.Lost,
		End: e.End, ExitCode: e.ExitCode, Error: e.Error,
	}
}
