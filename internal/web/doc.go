// Package web serves cronlock's live status page and the public JSON API it
// reads, on the daemon's existing HTTP listener.
//
// The page must work in an air-gapped cluster, so there is no CDN and no build
// step: the first paint is rendered with html/template (which escapes
// everything that comes from jobs or their output), and a small embedded
// vanilla script keeps it current by polling the JSON API every second,
// building DOM nodes with textContent only. A Content-Security-Policy of
// default-src 'self' forbids inline script as a second line of defence.
//
// Routes (see docs/web-notes.md for the API contract):
//
//	GET  /                          job list and live replicas
//	GET  /jobs/{name}               one job: its lock and last runs with output tails
//	GET  /static/...                embedded CSS and JS
//	GET  /api/jobs                  {"jobs": [Job...]}
//	GET  /api/jobs/{name}           JobDetail (Job + lock + runs)
//	GET  /api/jobs/{name}/runs      {"runs": [Run...]}, newest first
//	GET  /api/replicas              {"replicas": [Replica...]}
//	POST /api/jobs/{name}/trigger   start a run now         (admin token)
//	POST /api/jobs/{name}/suspend   stop scheduling the job (admin token)
//	POST /api/jobs/{name}/resume    schedule it again       (admin token)
//	POST /login                     the read token entered on the page
//	GET  /metrics                   Options.Metrics, when set
//
// Actions exist only when Options.AdminToken is set; they require the header
// "Authorization: Bearer <token>". No GET changes anything. With
// Options.ReadToken set, every route but /static/ and POST /login needs the
// read or admin token (readauth.go). Refused requests are logged at warn, at
// most once a minute per client address (refusals.go).
//
// It owns the page, its assets and the API's JSON shapes. It must not know
// NATS, buckets or the scheduler: it reads and acts through the Source its
// caller (internal/app) implements.
package web
