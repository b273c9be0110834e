package discoverytest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// The fake's signature check accepts what the SDK's signer produces with
// the test keys and refuses another secret, another region or service,
// and a body changed after signing.
func TestVerifySigV4(t *testing.T) {
	s := &Server{Region: "us-west-2"}
	body := []byte(`{"ClusterName":"c"}`)
	sign := func(secret, region, service string, sent []byte) *http.Request {
		r, _ := http.NewRequestWithContext(context.Background(), "POST", "http://127.0.0.1:1/", bytes.NewReader(sent))
		r.Header.Set("Content-Type", "application/x-amz-json-1.1")
		r.Header.Set("X-Amz-Target", "SageMaker.ListClusterNodes")
		sum := sha256.Sum256(body)
		err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: AccessKeyID, SecretAccessKey: secret},
			r, hex.EncodeToString(sum[:]), service, region, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if err := s.verifySigV4(sign(SecretAccessKey, "us-west-2", "sagemaker", body), body); err != nil {
		t.Errorf("good signature refused: %v", err)
	}
	for name, r := range map[string]*http.Request{
		"wrong secret":  sign("other", "us-west-2", "sagemaker", body),
		"wrong region":  sign(SecretAccessKey, "eu-west-1", "sagemaker", body),
		"wrong service": sign(SecretAccessKey, "us-west-2", "s3", body),
	} {
		if err := s.verifySigV4(r, body); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	tampered := []byte(`{"ClusterName":"d"}`)
	if err := s.verifySigV4(sign(SecretAccessKey, "us-west-2", "sagemaker", body), tampered); err == nil {
		t.Error("tampered body accepted")
	}
}
