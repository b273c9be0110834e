package soak

// A gateway whose wall clock jumps, for real, while it runs.
//
// Go programs read the time without libc (the vDSO, from assembly in the
// runtime), so libfaketime and LD_PRELOAD tricks do not reach them; a
// time namespace offsets only the monotonic and boot clocks, never
// CLOCK_REALTIME; setting the machine's clock would move every other test
// on it. So the soak builds a second gateway binary whose runtime adds an
// offset to CLOCK_REALTIME in time.now: one instruction (ADDQ) in the
// runtime's time_linux_amd64.s, applied with `go build -overlay`, and a
// runtime goroutine that reads the offset in seconds from the file named
// by FRONTDOOR_SOAK_CLOCK_FILE every 100 ms. The monotonic clock is left
// alone, exactly as when NTP steps a machine's clock: time.Since and every
// timer keep running, every wall-clock reading (time.Now().Unix(),
// certificates' validity, sealed state's timestamps, TLS) jumps.
//
// Nothing of this is in the repository's build: the patched runtime exists
// only in the overlay the soak writes into its temporary directory, so a
// frontdoor binary built any other way cannot have a clock offset, by
// accident or on purpose. The patch is made against the installed Go's own
// file and refuses to build if the instruction it follows has changed.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// ClockFileEnv names the file a clock-offset gateway reads its offset
// from (seconds, may be negative).
const ClockFileEnv = "FRONTDOOR_SOAK_CLOCK_FILE"

// timeNowAnchor is the instruction in runtime/time_linux_amd64.s after
// which the wall clock's seconds are in AX.
const timeNowAnchor = "ret:\n\tMOVQ\t16(SP), AX\t// realtime sec\n"

// runtimeClockFile is added to package runtime: the offset and the
// goroutine that reads it. Runtime code may not allocate on the heap in
// most places; the buffer is a global and the file is read with the
// runtime's own system calls.
const runtimeClockFile = `package runtime

import (
	"internal/runtime/atomic"
	"unsafe"
)

// soakClockOffset is added to CLOCK_REALTIME's seconds in time.now.
var soakClockOffset int64

var soakClockBuf [32]byte

func init() {
	if p := gogetenv("` + ClockFileEnv + `"); p != "" {
		go soakClockWatch(p)
	}
}

func soakClockWatch(path string) {
	name := append([]byte(path), 0)
	buf := &soakClockBuf
	for {
		fd := open(&name[0], 0, 0)
		if fd >= 0 {
			n := read(fd, unsafe.Pointer(&buf[0]), int32(len(buf)))
			closefd(fd)
			var v int64
			neg := false
			for i := int32(0); i < n; i++ {
				c := buf[i]
				if c == '-' && i == 0 {
					neg = true
				} else if c >= '0' && c <= '9' {
					v = v*10 + int64(c-'0')
				} else {
					break
				}
			}
			if neg {
				v = -v
			}
			atomic.Storeint64(&soakClockOffset, v)
		}
		timeSleep(100 * 1000 * 1000)
	}
}
`

// BuildClockGateway builds ./cmd/frontdoor of the repository at root with
// the clock-offset runtime into dir/frontdoor-clock (work files in dir).
func BuildClockGateway(ctx context.Context, root, dir string) (string, error) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return "", fmt.Errorf("the clock-offset gateway is built for linux/amd64 only, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	goroot, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOROOT: %w", err)
	}
	rtDir := filepath.Join(strings.TrimSpace(string(goroot)), "src", "runtime")
	asmPath := filepath.Join(rtDir, "time_linux_amd64.s")
	asm, err := os.ReadFile(asmPath)
	if err != nil {
		return "", err
	}
	if strings.Count(string(asm), timeNowAnchor) != 1 {
		return "", errors.New("runtime/time_linux_amd64.s of this Go does not read the wall clock where the soak's patch expects: update timeNowAnchor")
	}
	patched := strings.Replace(string(asm), timeNowAnchor, timeNowAnchor+"\tADDQ\truntime·soakClockOffset(SB), AX\n", 1)
	work := filepath.Join(dir, "clock-overlay")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return "", err
	}
	files := map[string]string{
		asmPath:                              filepath.Join(work, "time_linux_amd64.s"),
		filepath.Join(rtDir, "soakclock.go"): filepath.Join(work, "soakclock.go"),
	}
	if err := os.WriteFile(files[asmPath], []byte(patched), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(files[filepath.Join(rtDir, "soakclock.go")], []byte(runtimeClockFile), 0o644); err != nil {
		return "", err
	}
	overlay, err := json.Marshal(map[string]any{"Replace": files})
	if err != nil {
		return "", err
	}
	overlayPath := filepath.Join(work, "overlay.json")
	if err := os.WriteFile(overlayPath, overlay, 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "frontdoor-clock")
	cmd := exec.CommandContext(ctx, "go", "build", "-overlay", overlayPath, "-o", bin, "./cmd/frontdoor")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build (clock overlay): %v: %s", err, out)
	}
	return bin, nil
}

// SetClockOffset writes the offset a clock-offset gateway reads (within
// 100 ms).
func SetClockOffset(file string, seconds int64) error {
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(seconds, 10)+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}
