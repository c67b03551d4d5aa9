package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/cronlock/cronlock/internal/config"
)

// SignatureHeader carries the signature of a webhook's body; see Sign.
const SignatureHeader = config.SignatureHeader

const (
	// userAgent identifies cronlock's requests to webhook endpoints.
	userAgent = "cronlock-notify"
	// maxDrain bounds how much of a response is read so that the
	// connection can be reused; a longer body closes the connection.
	maxDrain = 64 << 10
)

// Sign returns the X-Cronlock-Signature value of body under key:
// "sha256=" followed by the lowercase hex HMAC-SHA256 of body. A receiver
// recomputes it over the raw request body and compares in constant time.
func Sign(key, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// webhook POSTs the payload to a URL.
type webhook struct {
	url     string // may embed a credential: never logged
	display string // scheme://host, for logs
	header  http.Header
	key     []byte // HMAC key; nil: no signature
	client  *http.Client
	masker  masker // for the responses logged
}

func newWebhook(c config.NotifyTarget, client *http.Client) (*webhook, error) {
	u, err := url.Parse(c.Webhook.Value())
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, errors.New("invalid webhook URL: want an absolute http or https URL with a host")
	}
	w := &webhook{
		url:     u.String(),
		display: u.Scheme + "://" + u.Host,
		header:  http.Header{},
		client:  client,
	}
	secrets := []string{c.Secret.Value()}
	for k, v := range c.Headers {
		w.header.Set(k, v.Value())
		secrets = append(secrets, v.Value())
	}
	if c.Secret != "" {
		w.key = []byte(c.Secret.Value())
	}
	if p, ok := u.User.Password(); ok {
		secrets = append(secrets, p, u.User.String())
	}
	if u.RawQuery != "" {
		secrets = append(secrets, u.RawQuery)
	}
	w.masker = newMasker(secrets...)
	return w, nil
}

func (w *webhook) String() string { return "webhook " + w.display }

// send POSTs d.body once. Network errors, 429 and 5xx may be retried; other
// non-2xx responses (including redirects) are final.
func (w *webhook) send(ctx context.Context, d delivery) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(d.body))
	if err != nil {
		return false, errors.New("cannot build the request for the webhook URL")
	}
	for k, v := range w.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if w.key != nil {
		req.Header.Set(SignatureHeader, Sign(w.key, d.body))
	}
	resp, err := w.client.Do(req)
	if err != nil {
		// A *url.Error repeats the URL, which may hold a credential.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return true, err
	}
	defer func() { _ = resp.Body.Close() }()
	limit := 2*maxSnippet + w.masker.longest()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, int64(limit)))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return false, nil
	}
	retry = resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests
	// The receiver's words, masked and inert: it may echo the request.
	return retry, fmt.Errorf("HTTP %s: %q", w.masker.snippet([]byte(resp.Status), false),
		w.masker.snippet(head, len(head) == limit))
}
