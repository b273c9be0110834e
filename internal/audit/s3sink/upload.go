package s3sink

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/frontdoor-hpc/frontdoor/internal/awsclient"
)

// API is the part of the S3 client the sink uses; *s3.Client satisfies it.
type API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
}

// NewClient builds the S3 client for cfg (see internal/awsclient: the
// default credential chain, cfg.Region, the SDK's standard retryer),
// cfg.Endpoint and cfg.PathStyle, and returns the transport under it.
func NewClient(ctx context.Context, cfg Config) (*s3.Client, *http.Transport, error) {
	ac, tr, err := awsclient.Load(ctx, cfg.Region, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("s3 client: %w", err)
	}
	return s3.NewFromConfig(ac, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
	}), tr, nil
}

// Object metadata the sink writes (x-amz-meta-…): the batch's checksum
// recognises a batch already uploaded.
const (
	metaSHA256 = "sha256"
	metaEvents = "events"
)

// upload puts one sealed batch and removes it from the spool. If the key
// holds another object already, the batch is renamed to a new sequence
// number and returned (to be uploaded next).
func (s *Sink) upload(b batchName) (*batchName, error) {
	path := filepath.Join(s.cfg.SpoolDir, b.String()+sealedExt)
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	events, err := countEvents(body)
	if err != nil {
		// A corrupt batch can never be uploaded usefully: set it aside.
		s.log.Error("audit s3: corrupt batch in the spool moved aside", "batch", b.String(), "err", err)
		os.Rename(path, path+".corrupt")
		s.mu.Lock()
		s.bytes -= int64(len(body))
		s.mu.Unlock()
		return nil, nil
	}
	sum := sha256.Sum256(body)
	digest := hex.EncodeToString(sum[:])
	key := b.key(s.cfg.Prefix)
	in := &s3.PutObjectInput{
		Bucket:      aws.String(s.cfg.Bucket),
		Key:         aws.String(key),
		Body:        bytes.NewReader(body),
		ContentType: aws.String("application/gzip"),
		IfNoneMatch: aws.String("*"),
		Metadata:    map[string]string{metaSHA256: digest, metaEvents: strconv.Itoa(events)},
	}
	switch s.cfg.SSE {
	case "AES256":
		in.ServerSideEncryption = types.ServerSideEncryptionAes256
	case "aws:kms":
		in.ServerSideEncryption = types.ServerSideEncryptionAwsKms
		if s.cfg.KMSKeyID != "" {
			in.SSEKMSKeyId = aws.String(s.cfg.KMSKeyID)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.UploadTimeout)
	defer cancel()
	go func() {
		select {
		case <-s.kill:
			cancel()
		case <-ctx.Done():
		}
	}()
	_, err = s.api.PutObject(ctx, in)
	if err != nil && isStatus(err, http.StatusPreconditionFailed) {
		// The key exists: our own earlier upload (its answer lost, or a
		// crash before the spool file went), or someone else's object.
		head, herr := s.api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: in.Bucket, Key: in.Key})
		if herr != nil {
			return nil, fmt.Errorf("put %s: exists; head: %w", key, herr)
		}
		if head.Metadata[metaSHA256] != digest {
			return s.renumber(b, key)
		}
		s.log.Info("audit s3: batch was already uploaded", "key", key)
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("put s3://%s/%s: %w", s.cfg.Bucket, key, err)
	}
	if err := os.Remove(path); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	s.metrics.uploads.WithLabelValues("ok").Inc()
	s.metrics.uploadedEvents.Add(float64(events))
	s.metrics.lastUpload.Set(float64(time.Now().UnixNano()) / 1e9)
	s.mu.Lock()
	s.bytes -= int64(len(body))
	s.mu.Unlock()
	s.log.Debug("audit s3: uploaded", "key", key, "events", events, "bytes", len(body))
	return nil, nil
}

// renumber gives a batch whose key another object holds the next sequence
// number: that object is never overwritten.
func (s *Sink) renumber(b batchName, key string) (*batchName, error) {
	s.mu.Lock()
	nb := batchName{day: b.day, gateway: b.gateway, seq: s.lastSeq + 1}
	if err := writeSeq(s.cfg.SpoolDir, nb.seq); err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("spool: %w", err)
	}
	s.lastSeq = nb.seq
	s.mu.Unlock()
	if err := os.Rename(filepath.Join(s.cfg.SpoolDir, b.String()+sealedExt), filepath.Join(s.cfg.SpoolDir, nb.String()+sealedExt)); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	s.log.Warn("audit s3: key already holds another object (spool directory replaced?); batch renumbered",
		"key", key, "new_key", nb.key(s.cfg.Prefix))
	return &nb, nil
}

func isStatus(err error, code int) bool {
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == code
}
