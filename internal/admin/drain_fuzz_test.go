package admin

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
)

// FuzzDrainRequest sends any body to POST /v1/drain and /v1/undrain,
// through the whole server (host and cross-site guards, content type,
// bearer token, access), as a full or a read-only admin. A drain happens
// only for a full admin whose body is exactly one JSON object naming the
// node (nothing after it), once, for that node, recorded under the
// token's name, never a "by" the body claims; the audit event and the
// answer carry the node and comment escaped: no control characters, the
// comment within its bound. Seeds: testdata/fuzz/FuzzDrainRequest, what
// `frontdoor drain` sends and variations.
func FuzzDrainRequest(f *testing.F) {
	tok, err := ParseTokens("tokens", []byte("ops "+opsSecret+"\ngrafana "+roSecret+" read-only\n"))
	if err != nil {
		f.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.Fuzz(func(t *testing.T, body []byte, on, readOnly bool) {
		src := &fakeSource{}
		s := New(Options{Source: src, Audit: src, Gateway: "gw1", Tokens: tok, Log: log})
		path, secret := "/v1/undrain", opsSecret
		if on {
			path = "/v1/drain"
		}
		if readOnly {
			secret = roSecret
		}
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:9101"+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)

		drains, events := src.count(), src.audited()
		if rec.Code != http.StatusOK {
			if drains != 0 {
				t.Fatalf("answered %d, yet drained: %q", rec.Code, src.lastDrain())
			}
			return
		}
		if readOnly {
			t.Fatalf("a read-only token drained (%d)", rec.Code)
		}
		var want drainRequest
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatalf("body %q is not one JSON object (%v), yet it drained", body, err)
		}
		if drains != 1 || src.lastDrain() != want.Node+" "+map[bool]string{true: "on", false: "off"}[on]+" token:ops" {
			t.Fatalf("body %q: drains %d, last %q", body, drains, src.lastDrain())
		}
		if len(want.Comment) > maxComment {
			t.Fatalf("a comment of %d bytes was taken", len(want.Comment))
		}
		if len(events) != 1 || events[0].User != "token:ops" || events[0].Result != "ok" {
			t.Fatalf("audit: %+v", events)
		}
		e := events[0]
		for what, v := range map[string]string{"node": e.Node, "reason": e.Reason} {
			if strings.ContainsFunc(v, unicode.IsControl) || len(v) > 2*maxComment {
				t.Fatalf("audit %s %q: control characters or unbounded", what, v)
			}
		}
		var answer struct {
			Node     string `json:"node"`
			Draining bool   `json:"draining"`
			By       string `json:"by"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil || answer.Node != want.Node || answer.Draining != on || answer.By != "token:ops" {
			t.Fatalf("answer %q: %+v %v", rec.Body.String(), answer, err)
		}
	})
}
