package usage

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
)

// chartReport is a month of three accounts' jobs, one of them with a
// name that needs escaping.
func chartReport() Report {
	var jobs []slurm.Job
	for d := 1; d <= 30; d++ {
		for i, acct := range []string{"nlp", "vision", "cs101 <&> \"course\""} {
			jobs = append(jobs, slurm.Job{ID: fmt.Sprint(d*10 + i), User: "u" + fmt.Sprint(i), Account: acct, Partition: "h100",
				State: "COMPLETED", Start: at(d, 1+i), End: at(d, 1+i+(d%5)+i), GPUs: 1 + i*2})
		}
	}
	return Aggregate(Input{From: nov1, To: dec1, Now: dec1, By: ByAccount, Jobs: jobs, Config: testConfig(), CapacityGPUs: 16})
}

// chartActual is chartReport with a bill: tagged, shared and
// infrastructure cost.
func chartActual(t *testing.T) Report {
	r := chartReport()
	if err := AddActual(&r, novBill(line("nlp", "compute", "1500"), line("shared", "compute", "2500.55"), line("", "gateway", "120"))); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSVGIsWellFormed(t *testing.T) {
	for name, r := range map[string]Report{"month": chartReport(), "empty": Aggregate(Input{From: nov1, To: dec1, Now: nov1, By: ByGroup}),
		"actual": chartActual(t)} {
		var b bytes.Buffer
		if err := WriteSVG(&b, r); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "<script") {
			t.Errorf("%s: the chart has a script", name)
		}
		if r.Actual != nil {
			for _, want := range []string{"nlp: actual ", "(unallocated bill): 120.00 USD", "actual bill 4120.55 USD", ">estimate<"} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("%s: no %q in the chart", name, want)
				}
			}
		}
		d := xml.NewDecoder(&b)
		for {
			_, err := d.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: not well-formed XML: %v", name, err)
			}
		}
	}
}

// The chart renders in a real browser: headless Chromium takes a
// screenshot, and the picture has the bars' colours in it, not a blank or
// an error page.
func TestSVGRendersInChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is missing (Debian package chromium; `make deps` installs it): the chart cannot be checked")
	}
	dir := t.TempDir()
	svg := filepath.Join(dir, "usage.svg")
	var b bytes.Buffer
	r := chartActual(t)
	if err := WriteSVG(&b, r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(svg, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "out.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+shot, "--window-size=960,900", "file://"+svg)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, out)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	bounds := img.Bounds()
	var nonWhite, blue, orange int
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			r, g, b = r>>8, g>>8, b>>8
			if r < 250 || g < 250 || b < 250 {
				nonWhite++
			}
			if near8(r, 0x00) && near8(g, 0x72) && near8(b, 0xB2) {
				blue++
			}
			if near8(r, 0xE6) && near8(g, 0x9F) && near8(b, 0x00) {
				orange++
			}
		}
	}
	total := bounds.Dx() * bounds.Dy()
	t.Logf("screenshot %dx%d: %d non-white pixels (%.1f%%), %d in the first bar colour, %d in the second",
		bounds.Dx(), bounds.Dy(), nonWhite, 100*float64(nonWhite)/float64(total), blue, orange)
	if nonWhite < total/50 {
		t.Errorf("the screenshot is nearly blank: %d of %d pixels not white", nonWhite, total)
	}
	if blue < 2000 || orange < 500 {
		t.Errorf("bars not drawn: %d pixels of the first colour, %d of the second", blue, orange)
	}
}

func near8(v, want uint32) bool { return v+6 >= want && v <= want+6 }
