package lifecycle

import (
	"fmt"
	"net"
	"os"
	"strings"
)

// sdNotify sends a state to systemd (sd_notify(3): a datagram to the Unix
// socket in $NOTIFY_SOCKET, "@" for the abstract namespace), or does
// nothing when the process was not started by a unit with Type=notify.
// The unit (deploy/systemd) uses:
//
//	READY=1          the first process, once it serves;
//	MAINPID=PID      the old process, once the new one is ready (the main
//	                 process may name its successor with NotifyAccess=main);
//	STOPPING=1       on SIGTERM, when the drain starts.
func sdNotify(state string) error {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return nil
	}
	if strings.HasPrefix(path, "@") {
		path = "\x00" + path[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	return nil
}
