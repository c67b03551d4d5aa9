package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/internal/jobstore"
	"github.com/cronlock/cronlock/internal/web"
)

// The status page's source changes runtime jobs through the bucket (see
// web.Definitions); every replica, this one too, schedules the change as
// its watch delivers it.

// runtimeState is the daemon's parts with runtime jobs enabled, or
// web.ErrDisabled saying how to enable them.
func (s *webSource) runtimeState(ctx context.Context) (webState, error) {
	st, err := s.state(ctx)
	if err != nil {
		return webState{}, err
	}
	if st.runtime == nil {
		return webState{}, fmt.Errorf("%w: %w", web.ErrDisabled, errDisabled)
	}
	return st, nil
}

// PutJob validates body against this replica's configuration and stores it.
func (s *webSource) PutJob(ctx context.Context, name string, body []byte, ifMatch uint64, by string) (uint64, error) {
	st, err := s.runtimeState(ctx)
	if err != nil {
		return 0, err
	}
	def, err := definitionFor(st.cfg, name, body)
	if err != nil {
		return 0, err
	}
	if fj, err := configJob(st.cfg, name); err == nil {
		return 0, fmt.Errorf("%w: %q is a job of the configuration file (%s:%d); a runtime job cannot take its name", web.ErrConflict, name, st.cfg.Path, fj.Line)
	}
	if n, limit := st.runtime.stored(), st.cfg.RuntimeJobs.MaxJobs; !st.runtime.has(name) && n >= limit {
		return 0, fmt.Errorf("%w: the bucket holds %d runtime jobs, the limit runtime_jobs.max_jobs (%d)", web.ErrConflict, n, limit)
	}
	rev, err := st.runtime.store.Put(ctx, name, def.JSON, ifMatch, by)
	return rev, storeError(name, err)
}

// definitionFor validates body as the one definition of the job name.
func definitionFor(cfg *config.Config, name string, body []byte) (config.Definition, error) {
	defs, err := cfg.ParseDefinitions("definition", body)
	if err != nil {
		field := ""
		var fe *config.FieldError
		if errors.As(err, &fe) {
			field = fe.Path
		}
		return config.Definition{}, &web.DefinitionError{Field: field, Msg: err.Error()}
	}
	switch {
	case len(defs) != 1:
		return config.Definition{}, &web.DefinitionError{Msg: "want one job definition, not a jobs: list (put each at its own path)"}
	case defs[0].Job.Name != name:
		return config.Definition{}, &web.DefinitionError{Field: "name",
			Msg: fmt.Sprintf("definition: name: %q is not the name in the path, %q", defs[0].Job.Name, name)}
	}
	return defs[0], nil
}

// DeleteJob removes the runtime job name.
func (s *webSource) DeleteJob(ctx context.Context, name string, ifMatch uint64, by string) (uint64, error) {
	st, err := s.runtimeState(ctx)
	if err != nil {
		return 0, err
	}
	if fj, err := configJob(st.cfg, name); err == nil {
		return 0, fmt.Errorf("%w: %q is a job of the configuration file (%s:%d): remove it there", web.ErrConflict, name, st.cfg.Path, fj.Line)
	}
	rev, err := st.runtime.store.Delete(ctx, name, ifMatch, by)
	return rev, storeError(name, err)
}

// JobRevisions lists the kept revisions of the runtime job name.
func (s *webSource) JobRevisions(ctx context.Context, name string) ([]web.Revision, error) {
	st, err := s.runtimeState(ctx)
	if err != nil {
		return nil, err
	}
	revs, err := st.runtime.store.Revisions(ctx, name)
	if err != nil {
		return nil, storeError(name, err)
	}
	out := make([]web.Revision, len(revs))
	for i, r := range revs {
		out[i] = web.Revision{Revision: r.Revision, Operation: r.Operation, By: r.By, At: r.At, Definition: r.Definition}
	}
	return out, nil
}

// storeError maps the store's errors to the page's.
func storeError(name string, err error) error {
	switch {
	case errors.Is(err, jobstore.ErrNotFound):
		return fmt.Errorf("runtime job %q: %w", name, web.ErrNotFound)
	case errors.Is(err, jobstore.ErrRevision):
		return fmt.Errorf("runtime job %q: %w: %w", name, web.ErrPrecondition, err)
	}
	return err
}
