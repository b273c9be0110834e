// Package kmstest is an in-process AWS KMS endpoint for tests: it speaks
// the real wire protocol (awsJson1.1: POST /, X-Amz-Target
// TrentService.Sign / TrentService.GetPublicKey, SigV4 checked against the
// test credentials, errors as "__type") and signs with a real ECDSA P-256
// key, as KMS does for a key of KeySpec ECC_NIST_P256: DER signatures over
// the SHA-256 digest it is sent. A test can make it slow, fail, throttle,
// disable the key or answer signatures that do not verify.
package kmstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/awsclient/awsjsontest"
)

// Test credentials: set them in the environment (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY) so the SDK's default chain finds them.
const (
	AccessKeyID     = awsjsontest.AccessKeyID
	SecretAccessKey = awsjsontest.SecretAccessKey
)

// Server is the fake KMS endpoint with one signing key. Its methods are
// safe for concurrent use.
type Server struct {
	URL    string
	Region string
	// KeyID is the key's ID, ARN its ARN, Alias an alias name for it
	// ("alias/frontdoor-test"); requests may name the key by any of them
	// (or the alias's ARN).
	KeyID, ARN, Alias string

	key  *ecdsa.PrivateKey
	srv  *httptest.Server
	stop chan struct{} // closed when the test ends: delayed answers give up
	// Record counts requests by operation (Calls) and keeps the protocol
	// violations seen (Problems).
	awsjsontest.Record

	mu sync.Mutex // mu protects the following
	// delay holds every answer back this long (a hung KMS when longer
	// than the client's timeout).
	delay    time.Duration
	failing  bool   // every call answers 500 KMSInternalException
	throttle int    // Sign calls still to answer ThrottlingException
	disabled bool   // the key is disabled (DisabledException)
	badSig   bool   // Sign answers a signature by another key
	keySpec  string // what GetPublicKey says the key is
}

// Start serves a fake KMS with a fresh P-256 key in region on 127.0.0.1;
// it stops when the test ends.
func Start(tb testing.TB, region string) *Server {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	id := "1234abcd-12ab-34cd-56ef-1234567890ab"
	s := &Server{Region: region, KeyID: id, ARN: "arn:aws:kms:" + region + ":123456789012:key/" + id,
		Alias: "alias/frontdoor-test", key: key, stop: make(chan struct{}), keySpec: "ECC_NIST_P256"}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	tb.Cleanup(func() {
		close(s.stop)
		s.srv.Close()
		if p := s.Problems(); len(p) > 0 {
			tb.Errorf("fake KMS saw protocol problems:\n%s", strings.Join(p, "\n"))
		}
	})
	return s
}

// PublicKey is the key as login nodes trust it (TrustedUserCAKeys).
func (s *Server) PublicKey() ssh.PublicKey {
	k, err := ssh.NewPublicKey(&s.key.PublicKey)
	if err != nil {
		panic(err) // a P-256 key always converts
	}
	return k
}

// SetDelay holds every answer back d (0: none).
func (s *Server) SetDelay(d time.Duration) { s.mu.Lock(); s.delay = d; s.mu.Unlock() }

// Fail makes every call answer HTTP 500 (an outage) until Fail(false).
func (s *Server) Fail(on bool) { s.mu.Lock(); s.failing = on; s.mu.Unlock() }

// Throttle makes the next n Sign calls answer ThrottlingException.
func (s *Server) Throttle(n int) { s.mu.Lock(); s.throttle = n; s.mu.Unlock() }

// Disable disables the key (DisabledException) until Disable(false).
func (s *Server) Disable(on bool) { s.mu.Lock(); s.disabled = on; s.mu.Unlock() }

// BadSignatures makes Sign answer signatures by another key.
func (s *Server) BadSignatures(on bool) { s.mu.Lock(); s.badSig = on; s.mu.Unlock() }

// SetKeySpec changes the KeySpec GetPublicKey reports (the key stays
// P-256): a test of what a gateway does with a key of the wrong kind.
func (s *Server) SetKeySpec(spec string) { s.mu.Lock(); s.keySpec = spec; s.mu.Unlock() }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	svc := awsjsontest.Service{TargetPrefix: "TrentService", SigningName: "kms", Region: s.Region}
	op, body, ok := svc.Read(w, r, &s.Record)
	if !ok {
		return
	}
	s.mu.Lock()
	delay, failing, disabled := s.delay, s.failing, s.disabled
	throttled := op == "Sign" && s.throttle > 0
	if throttled {
		s.throttle--
	}
	s.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return // the client gave up
		case <-s.stop:
			return
		}
	}
	var in struct {
		KeyId            string
		Message          []byte
		MessageType      string
		SigningAlgorithm string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		s.Problem("%s body: %v", op, err)
		awsjsontest.WriteError(w, 400, "SerializationException", err.Error())
		return
	}
	switch {
	case failing:
		awsjsontest.WriteError(w, 500, "KMSInternalException", "fake outage")
		return
	case throttled:
		awsjsontest.WriteError(w, 400, "ThrottlingException", "Rate exceeded")
		return
	case !s.names(in.KeyId):
		awsjsontest.WriteError(w, 400, "NotFoundException", "Key '"+in.KeyId+"' does not exist")
		return
	case disabled:
		awsjsontest.WriteError(w, 400, "DisabledException", s.ARN+" is disabled.")
		return
	}
	switch op {
	case "GetPublicKey":
		s.getPublicKey(w)
	case "Sign":
		s.sign(w, in.Message, in.MessageType, in.SigningAlgorithm)
	default:
		s.Problem("unexpected operation %s", op)
		awsjsontest.WriteError(w, 400, "UnknownOperationException", op)
	}
}

// names reports whether id names the key: its ID, ARN, alias or alias
// ARN.
func (s *Server) names(id string) bool {
	aliasARN := strings.Replace(s.ARN, "key/"+s.KeyID, s.Alias, 1)
	return id == s.KeyID || id == s.ARN || id == s.Alias || id == aliasARN
}

func (s *Server) getPublicKey(w http.ResponseWriter) {
	der, err := x509.MarshalPKIXPublicKey(&s.key.PublicKey)
	if err != nil {
		awsjsontest.WriteError(w, 500, "KMSInternalException", err.Error())
		return
	}
	s.mu.Lock()
	spec := s.keySpec
	s.mu.Unlock()
	awsjsontest.WriteJSON(w, map[string]any{
		"KeyId": s.ARN, "PublicKey": der, "KeySpec": spec, "CustomerMasterKeySpec": spec,
		"KeyUsage": "SIGN_VERIFY", "SigningAlgorithms": []string{"ECDSA_SHA_256"},
	})
}

// sign signs like KMS: DIGEST messages are the digest itself (32 bytes for
// ECDSA_SHA_256), RAW ones are hashed first (at most 4096 bytes).
func (s *Server) sign(w http.ResponseWriter, msg []byte, msgType, algo string) {
	if algo != "ECDSA_SHA_256" {
		awsjsontest.WriteError(w, 400, "InvalidKeyUsageException", "signing algorithm "+algo+" is not valid for this key")
		return
	}
	digest := msg
	switch msgType {
	case "DIGEST":
		if len(msg) != sha256.Size {
			awsjsontest.WriteError(w, 400, "ValidationException", fmt.Sprintf("Digest is invalid length for algorithm ECDSA_SHA_256: %d", len(msg)))
			return
		}
	case "", "RAW":
		s.Problem("Sign with MessageType %q: frontdoor sends DIGEST", msgType)
		if len(msg) > 4096 {
			awsjsontest.WriteError(w, 400, "ValidationException", "message too long")
			return
		}
		sum := sha256.Sum256(msg)
		digest = sum[:]
	default:
		awsjsontest.WriteError(w, 400, "ValidationException", "unknown MessageType "+msgType)
		return
	}
	key := s.key
	s.mu.Lock()
	bad := s.badSig
	s.mu.Unlock()
	if bad {
		other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			awsjsontest.WriteError(w, 500, "KMSInternalException", err.Error())
			return
		}
		key = other
	}
	sig, err := ecdsa.SignASN1(rand.Reader, key, digest)
	if err != nil {
		awsjsontest.WriteError(w, 500, "KMSInternalException", err.Error())
		return
	}
	awsjsontest.WriteJSON(w, map[string]any{"KeyId": s.ARN, "Signature": sig, "SigningAlgorithm": algo})
}
