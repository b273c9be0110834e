package harness

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Prerequisites reports, as one error naming everything missing, whether
// the programs are installed and the process runs as root (the suites
// start sshd and samba and create Unix users). Suites fail on it loudly;
// they never skip.
func Prerequisites(programs ...string) error {
	var missing []string
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("prerequisites missing: %s (run `make deps`)", strings.Join(missing, ", "))
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("must run as root: the suite starts sshd and creates Unix users")
	}
	return nil
}
