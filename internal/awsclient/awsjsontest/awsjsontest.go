// Package awsjsontest is what in-process fakes of AWS JSON services share
// (SageMaker in internal/discovery/discoverytest, KMS in
// internal/ca/kms/kmstest): the awsJson1.1 wire protocol — POST /,
// X-Amz-Target PREFIX.Operation, application/x-amz-json-1.1, errors as a
// 4xx/5xx with "__type" — and a SigV4 check of every request against the
// test credentials, so a fake answers only what the real SDK would send
// the real service.
package awsjsontest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Test credentials: set them in the environment (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY) so the SDK's default chain finds them.
const (
	AccessKeyID     = "AKIDFRONTDOORTEST"
	SecretAccessKey = "frontdoor-test-secret-key/0123456789abcdef"
)

// Setenv gives the SDK's default credential chain the test keys through
// the environment, and nothing else to find: no profile, no shared config
// files, no instance metadata service. set is t.Setenv in a test, or
// os.Setenv in TestMain.
func Setenv(set func(key, value string)) {
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": AccessKeyID, "AWS_SECRET_ACCESS_KEY": SecretAccessKey,
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_REGION": "", "AWS_DEFAULT_REGION": "",
		"AWS_CONFIG_FILE": "/nonexistent/frontdoor-test", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/frontdoor-test",
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		set(k, v)
	}
}

// Service is one fake service's protocol identity.
type Service struct {
	// TargetPrefix is the X-Amz-Target prefix ("SageMaker",
	// "TrentService").
	TargetPrefix string
	// SigningName is the SigV4 service name ("sagemaker", "kms").
	SigningName string
	// Region is the region requests must be signed for.
	Region string
}

// Record is what a fake saw: requests by operation and protocol
// problems. Safe for concurrent use; the zero value is ready.
type Record struct {
	mu       sync.Mutex // mu protects the following
	calls    map[string]int
	problems []string
}

// Calls returns how many requests op received, retries included.
func (r *Record) Calls(op string) int { r.mu.Lock(); defer r.mu.Unlock(); return r.calls[op] }

// Problems returns the protocol violations seen (bad signature, headers…).
func (r *Record) Problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.problems)
}

// Problem records a protocol violation.
func (r *Record) Problem(format string, args ...any) {
	r.mu.Lock()
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *Record) call(op string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[string]int{}
	}
	r.calls[op]++
}

// Read checks one request's protocol and signature, counts it in rec and
// returns its operation and body. On a violation it records the problem,
// answers the request itself (as the service would) and returns ok false.
func (s Service) Read(w http.ResponseWriter, r *http.Request, rec *Record) (op string, body []byte, ok bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		rec.Problem("read body: %v", err)
		return "", nil, false
	}
	target := r.Header.Get("X-Amz-Target")
	op, named := strings.CutPrefix(target, s.TargetPrefix+".")
	switch {
	case r.Method != http.MethodPost || r.URL.Path != "/":
		WriteError(w, 404, "UnknownOperationException", "not found")
		rec.Problem("%s %s: want POST /", r.Method, r.URL.Path)
		return "", nil, false
	case !named:
		WriteError(w, 400, "UnknownOperationException", "no target")
		rec.Problem("X-Amz-Target %q: want %s.<Operation>", target, s.TargetPrefix)
		return "", nil, false
	case r.Header.Get("Content-Type") != "application/x-amz-json-1.1":
		WriteError(w, 400, "SerializationException", "bad content type")
		rec.Problem("%s: Content-Type %q, want application/x-amz-json-1.1", op, r.Header.Get("Content-Type"))
		return "", nil, false
	}
	if err := s.VerifySigV4(r, body); err != nil {
		WriteError(w, 403, "InvalidSignatureException", err.Error())
		rec.Problem("%s: SigV4: %v", op, err)
		return "", nil, false
	}
	rec.call(op)
	return op, body, true
}

// WriteJSON answers v as an awsJson1.1 result.
func WriteJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("x-amzn-RequestId", "00000000-0000-0000-0000-000000000000")
	w.Write(b)
}

// WriteError answers like AWS JSON services: the error code in "__type".
func WriteError(w http.ResponseWriter, code int, typ, msg string) {
	b, _ := json.Marshal(map[string]string{"__type": typ, "message": msg})
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("x-amzn-RequestId", "00000000-0000-0000-0000-000000000000")
	w.WriteHeader(code)
	w.Write(b)
}

// VerifySigV4 parses the Authorization header, checks the credential
// scope (the test key, s.Region, s.SigningName) and recomputes the
// signature over the headers the client signed.
func (s Service) VerifySigV4(r *http.Request, body []byte) error {
	auth := r.Header.Get("Authorization")
	algo, rest, _ := strings.Cut(auth, " ")
	if algo != "AWS4-HMAC-SHA256" {
		return fmt.Errorf("Authorization %q: not AWS4-HMAC-SHA256", auth)
	}
	fields := map[string]string{}
	for _, f := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return fmt.Errorf("credential %q: want KEY/DATE/REGION/SERVICE/aws4_request", fields["Credential"])
	}
	if scope[0] != AccessKeyID || scope[2] != s.Region || scope[3] != s.SigningName {
		return fmt.Errorf("credential scope key=%s region=%s service=%s, want %s/%s/%s", scope[0], scope[2], scope[3],
			AccessKeyID, s.Region, s.SigningName)
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("X-Amz-Date: %w", err)
	}
	if scope[1] != when.Format("20060102") {
		return fmt.Errorf("credential date %s but X-Amz-Date %s", scope[1], when)
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	if h := r.Header.Get("X-Amz-Content-Sha256"); h != "" && h != hash {
		return fmt.Errorf("X-Amz-Content-Sha256 does not match the body")
	}
	re, _ := http.NewRequestWithContext(context.Background(), r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	re.Header = http.Header{}
	re.ContentLength = 0
	signed := strings.Split(fields["SignedHeaders"], ";")
	if !slices.Contains(signed, "host") || !slices.Contains(signed, "x-amz-target") {
		return fmt.Errorf("SignedHeaders %q lack host or x-amz-target", fields["SignedHeaders"])
	}
	for _, h := range signed {
		switch h {
		case "host":
		case "content-length":
			re.ContentLength = int64(len(body))
		default:
			re.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	re.Header.Del("Authorization")
	creds := aws.Credentials{AccessKeyID: AccessKeyID, SecretAccessKey: SecretAccessKey}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, re, hash, s.SigningName, s.Region, when); err != nil {
		return err
	}
	if got := re.Header.Get("Authorization"); got != auth {
		return fmt.Errorf("signature mismatch:\n got  %s\n want %s", auth, got)
	}
	return nil
}
