package s3sink

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
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

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
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

// upload puts the oldest link file and removes it from the spool. If the
// key holds another object already, that object is left alone and the
// batch is set aside (NAME.conflict): only this gateway's credentials can
// write under its prefix, and its chains are named at random, so the
// other object is evidence, not an accident.
func (s *Sink) upload() error {
	s.mu.Lock()
	lf := s.links[0]
	s.mu.Unlock()
	path := filepath.Join(s.cfg.SpoolDir, lf.name())
	obj, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	sum := sha256.Sum256(obj)
	digest := hex.EncodeToString(sum[:])
	key := headerKey(s.cfg.Prefix, lf.header)
	in := &s3.PutObjectInput{
		Bucket:      aws.String(s.cfg.Bucket),
		Key:         aws.String(key),
		Body:        bytes.NewReader(obj),
		ContentType: aws.String("application/gzip"),
		// Create only: the IAM policy in deploy/ refuses a PutObject
		// without it, so even this gateway's credentials cannot overwrite.
		IfNoneMatch: aws.String("*"),
		// An explicit checksum: S3 checks the body with it, and a bucket
		// with Object Lock default retention requires one.
		ChecksumAlgorithm: types.ChecksumAlgorithmSha256,
		ChecksumSHA256:    aws.String(base64.StdEncoding.EncodeToString(sum[:])),
		Metadata:          map[string]string{metaSHA256: digest, metaEvents: strconv.Itoa(lf.header.Events)},
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
			return fmt.Errorf("put %s: exists; head: %w", key, herr)
		}
		if head.Metadata[metaSHA256] != digest {
			return s.conflict(lf, path, key)
		}
		s.log.Info("audit s3: batch was already uploaded", "key", key)
		err = nil
	}
	if err != nil {
		return fmt.Errorf("put s3://%s/%s: %w", s.cfg.Bucket, key, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	s.metrics.uploads.WithLabelValues("ok").Inc()
	s.metrics.uploadedEvents.Add(float64(lf.header.Events))
	s.metrics.lastUpload.Set(float64(time.Now().UnixNano()) / 1e9)
	s.mu.Lock()
	s.links = s.links[1:]
	s.linkBytes -= lf.size
	s.updateGaugesLocked()
	s.mu.Unlock()
	s.log.Debug("audit s3: uploaded", "key", key, "events", lf.header.Events, "bytes", len(obj))
	return nil
}

// conflict sets a batch aside whose key holds another object.
func (s *Sink) conflict(lf linkFile, path, key string) error {
	s.log.Error("AUDIT BATCH NOT UPLOADED: its key already holds a different object; the batch is kept in the spool, the object left alone",
		"key", key, "bucket", s.cfg.Bucket, "kept_as", path+".conflict")
	if err := os.Rename(path, path+".conflict"); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	s.metrics.conflicts.Inc()
	s.metrics.dropped.WithLabelValues("conflict", audit.ClassAuthenticated.String()).Add(float64(lf.header.Events))
	s.mu.Lock()
	s.links = s.links[1:]
	s.linkBytes -= lf.size
	s.updateGaugesLocked()
	s.mu.Unlock()
	return nil
}

func isStatus(err error, code int) bool {
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == code
}
