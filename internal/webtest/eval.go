package webtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// Eval evaluates a JavaScript expression in the page and returns its value
// decoded as JSON into T. It fails the test on an exception, and on
// undefined or null unless T can be nil.
func Eval[T any](b *Browser, expr string) T {
	b.tb.Helper()
	v, err := eval[T](b, expr)
	if err != nil {
		b.tb.Fatalf("webtest: eval %s: %v", expr, err)
	}
	return v
}

func eval[T any](b *Browser, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, b.step)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// Defined reports whether the global expression (for example
// "window.__pwned") evaluates to something other than undefined.
func (b *Browser) Defined(expr string) bool {
	b.tb.Helper()
	return Eval[bool](b, "typeof ("+expr+") !== 'undefined'")
}

// Text returns the whitespace-collapsed textContent of the first element
// matching sel, and whether there is one. It does not wait.
func (b *Browser) Text(sel string) (string, bool) {
	b.tb.Helper()
	p := Eval[*string](b, "(() => { const e = document.querySelector("+jsString(sel)+"); return e ? e.textContent : null })()")
	if p == nil {
		return "", false
	}
	return collapse(*p), true
}

// Count returns the number of elements matching sel. It does not wait.
func (b *Browser) Count(sel string) int {
	b.tb.Helper()
	return Eval[int](b, "document.querySelectorAll("+jsString(sel)+").length")
}

// WaitText waits up to timeout until the textContent of the first element
// matching sel contains want (both whitespace-collapsed), and returns how
// long that took. On timeout it fails the test with the last text seen.
func (b *Browser) WaitText(sel, want string, timeout time.Duration) time.Duration {
	b.tb.Helper()
	want = collapse(want)
	var last string
	took, err := b.waitFor(timeout, func() (bool, error) {
		text, ok := b.Text(sel)
		last = text
		if !ok {
			last = "(no element)"
		}
		return ok && strings.Contains(text, want), nil
	})
	if err != nil {
		b.tb.Fatalf("webtest: %q never contained %q within %v; last text: %q", sel, want, timeout, last)
	}
	return took
}

// WaitCount waits up to timeout until exactly n elements match sel.
func (b *Browser) WaitCount(sel string, n int, timeout time.Duration) time.Duration {
	b.tb.Helper()
	var last int
	took, err := b.waitFor(timeout, func() (bool, error) {
		last = b.Count(sel)
		return last == n, nil
	})
	if err != nil {
		b.tb.Fatalf("webtest: %q matched %d elements, not %d, within %v", sel, last, n, timeout)
	}
	return took
}

// WaitTrue waits up to timeout until the JavaScript expression is true.
func (b *Browser) WaitTrue(expr string, timeout time.Duration) time.Duration {
	b.tb.Helper()
	took, err := b.waitFor(timeout, func() (bool, error) { return eval[bool](b, expr) })
	if err != nil {
		b.tb.Fatalf("webtest: %s not true within %v: %v", expr, timeout, err)
	}
	return took
}

// errTimeout is what waitFor returns when the condition never held.
var errTimeout = errors.New("timed out")

// waitFor polls cond until it is true, fails, or timeout passes.
func (b *Browser) waitFor(timeout time.Duration, cond func() (bool, error)) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		ok, err := cond()
		if ok && err == nil {
			return time.Since(start), nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return 0, fmt.Errorf("%w: %w", errTimeout, err)
			}
			return 0, errTimeout
		}
		time.Sleep(pollEvery)
	}
}
