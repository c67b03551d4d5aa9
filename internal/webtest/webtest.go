// Package webtest drives a real headless Chromium for browser tests of the
// status page (internal/web) and of the daemon that serves it. It uses the
// system's chromium (Debian's chromium package, which .ci/run installs) via
// chromedp, so nothing is downloaded at test time.
//
// When chromium is not on PATH, Start fails the test if the environment
// variable CI is "true" (CI must not pass by skipping) and skips it with a
// clear message otherwise.
//
// Every wait polls the page with a deadline instead of sleeping, and every
// failure reports what the page showed last. The browser's console messages
// and uncaught exceptions are collected, so a test can assert that the page
// ran without errors.
//
// It owns the browser for tests only; the product never imports it.
package webtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Defaults for Options.
const (
	defaultWidth  = 1280
	defaultHeight = 800
	// defaultStep bounds one browser action (navigate, click, evaluate); the
	// machine running the tests may be loaded.
	defaultStep = 60 * time.Second
	// pollEvery is how often waits look at the page again.
	pollEvery = 50 * time.Millisecond
)

// Options configures Start. The zero value is a 1280x800 window.
type Options struct {
	// Width and Height are the window size in CSS pixels; zero: 1280x800.
	Width, Height int
	// StepTimeout bounds each browser action; zero: one minute.
	StepTimeout time.Duration
}

// Browser is one headless Chromium with one tab. Its methods fail the test
// (t.Fatal) on error, so they must be called from the goroutine of the test
// it is bound to; For binds it to a subtest.
type Browser struct {
	tb   testing.TB
	ctx  context.Context // the tab's chromedp context
	step time.Duration
	log  *consoleLog
}

// consoleLog collects the tab's console messages.
type consoleLog struct {
	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
}

// For returns the same browser (same tab) reporting failures to tb, so
// subtests can share one browser instead of starting one each.
func (b *Browser) For(tb testing.TB) *Browser {
	c := *b
	c.tb = tb
	return &c
}

// ExecPath returns the path of the system's chromium.
func ExecPath() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("chromium is not on PATH (Debian: apt-get install chromium)")
}

// Start launches chromium with one blank tab and stops it at test cleanup.
func Start(tb testing.TB, o Options) *Browser {
	tb.Helper()
	path, err := ExecPath()
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("webtest: %v; CI=true requires a real browser", err)
		}
		tb.Skipf("webtest: %v; skipping the browser test (it fails instead when CI=true)", err)
	}
	if o.Width == 0 || o.Height == 0 {
		o.Width, o.Height = defaultWidth, defaultHeight
	}
	if o.StepTimeout == 0 {
		o.StepTimeout = defaultStep
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.WindowSize(o.Width, o.Height),
		// Containers (and root) have no usable sandbox; the tests only load
		// their own local pages.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(tb.TempDir()),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	tb.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	b := &Browser{tb: tb, ctx: ctx, step: o.StepTimeout, log: &consoleLog{}}
	// The first Run starts the browser; it must not carry a timeout (that
	// would stop the whole browser when it expires).
	if err := chromedp.Do(ctx); err != nil {
		tb.Fatalf("webtest: starting %s: %v", path, err)
	}
	// The window includes the browser's own UI; the viewport is what pages
	// and screenshots see, so pin it to the asked size.
	b.Viewport(o.Width, o.Height, false)
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.log.mu.Lock()
			b.log.messages = append(b.log.messages, m)
			b.log.mu.Unlock()
		}
	}()
	return b
}

// do runs actions with the step timeout.
func (b *Browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.tb.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.step)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.tb.Fatalf("webtest: %s: %v", what, err)
	}
}

// Navigate loads url and waits for its load event.
func (b *Browser) Navigate(url string) {
	b.tb.Helper()
	b.do("navigate to "+url, chromedp.Navigate(url))
}

// Click clicks the first element matching the CSS selector, waiting for it
// to be visible.
func (b *Browser) Click(sel string) {
	b.tb.Helper()
	b.do("click "+sel, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// Type focuses the input matching sel and types text into it, as a user
// would (input events fire).
func (b *Browser) Type(sel, text string) {
	b.tb.Helper()
	b.do("type into "+sel, chromedp.SendKeys(chromedp.CSS(sel), text, chromedp.NodeVisible))
}

// Viewport changes the page's viewport, for example to phone width;
// mobile also emulates a touch device.
func (b *Browser) Viewport(width, height int, mobile bool) {
	b.tb.Helper()
	var opts []chromedp.EmulateViewportOption
	if mobile {
		opts = append(opts, chromedp.EmulateMobile)
	}
	b.do("set viewport", chromedp.EmulateViewport(int64(width), int64(height), opts...))
}

// Screenshot returns a PNG of the viewport.
func (b *Browser) Screenshot() []byte {
	b.tb.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.step)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.tb.Fatalf("webtest: screenshot: %v", err)
	}
	return png
}

// Console returns the console messages and uncaught exceptions seen so far.
func (b *Browser) Console() []chromedp.ConsoleMessage {
	b.log.mu.Lock()
	defer b.log.mu.Unlock()
	return append([]chromedp.ConsoleMessage(nil), b.log.messages...)
}

// Problems returns the console errors, warnings and uncaught exceptions
// seen so far, as text.
func (b *Browser) Problems() []string {
	var out []string
	for _, m := range b.Console() {
		switch m.Type {
		case chromedp.ConsoleError, chromedp.ConsoleWarning, chromedp.ConsoleException:
			out = append(out, fmt.Sprintf("%s (%s:%d)", m.String(), m.URL, m.Line+1))
		}
	}
	return out
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	q, _ := json.Marshal(s) // a string always marshals
	return string(q)
}

// collapse trims and joins runs of white space, as a reader sees text.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// ClearConsole forgets the console messages seen so far, so a subtest
// sharing the browser sees only its own in Problems.
func (b *Browser) ClearConsole() {
	b.log.mu.Lock()
	defer b.log.mu.Unlock()
	b.log.messages = nil
}
