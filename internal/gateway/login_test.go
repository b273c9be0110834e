package gateway

import (
	"errors"
	"testing"
)

// Only failures that say something about the node for everyone push it
// back for everyone: a refused certificate names one user, a certificate
// the CA did not sign no node.
func TestNodeLevel(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{&BackendError{Node: "n", Stage: StageConnect, Err: errors.New("refused")}, true},
		{&BackendError{Node: "n", Stage: StageHandshake, Err: errors.New("eof")}, true},
		{&BackendError{Node: "n", Stage: StageHostKey, Err: errors.New("mismatch")}, true},
		{&BackendError{Node: "n", Stage: StageAuth, Err: errors.New("unable to authenticate")}, false},
		{&BackendError{Node: "n", Stage: StageCert, Err: errors.New("user CA unavailable")}, false},
		{errors.New("something else"), true},
	} {
		if got := nodeLevel(tt.err); got != tt.want {
			t.Errorf("nodeLevel(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
