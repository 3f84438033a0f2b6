package session

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// Benchmarks run only with -bench (make bench); each reports its figure
// next to a baseline measured in the same run, and the ratio of the two.

// BenchmarkStartToFirstByte: from Start to the child's first output byte,
// through a session vs. the same command via plain os/exec and a pipe.
func BenchmarkStartToFirstByte(b *testing.B) {
	var sessionTotal, execTotal time.Duration
	for range b.N {
		sessionTotal += firstByteSession(b)
		execTotal += firstByteExec(b)
	}
	n := float64(b.N)
	b.ReportMetric(float64(sessionTotal.Microseconds())/n, "session-µs")
	b.ReportMetric(float64(execTotal.Microseconds())/n, "exec-µs")
	b.ReportMetric(float64(sessionTotal)/float64(execTotal), "session/exec")
}

func firstByteSession(b *testing.B) time.Duration {
	first := make(chan time.Time, 1)
	start := time.Now()
	s, err := Start(context.Background(), Spec{
		Argv: []string{"echo", "x"},
		Observer: func([]byte) {
			select {
			case first <- time.Now():
			default:
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	s.Wait()
	return (<-first).Sub(start)
}

func firstByteExec(b *testing.B) time.Duration {
	start := time.Now()
	cmd := exec.Command("echo", "x")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	if _, err := out.Read(make([]byte, 1)); err != nil {
		b.Fatal(err)
	}
	d := time.Since(start)
	io.Copy(io.Discard, out)
	cmd.Wait()
	return d
}

// BenchmarkThroughput1GB: 1 GB of agent-like output (coloured lines)
// through a session writing both transcripts, vs. `cat` of the same bytes
// in a bare pty read into io.Discard. It also reports the peak RSS of
// this process during the session run (target: under 64 MB).
// WALKIE_BENCH_MB overrides the size.
func BenchmarkThroughput1GB(b *testing.B) {
	size := int64(1 << 30)
	if v := os.Getenv("WALKIE_BENCH_MB"); v != "" {
		mb, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("WALKIE_BENCH_MB: %v", err)
		}
		size = int64(mb) << 20
	}
	dir := b.TempDir()
	data := filepath.Join(dir, "output")
	if err := writeAgentOutput(data, size); err != nil {
		b.Fatal(err)
	}
	var sessionTotal, bareTotal time.Duration
	var peak int64
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		resetPeakRSS(b)
		start := time.Now()
		r, err := Run(context.Background(), Spec{
			Argv:     []string{"cat", data},
			RawPath:  filepath.Join(dir, "raw"),
			TextPath: filepath.Join(dir, "text"),
		})
		if err != nil || r.Ending != EndExited || r.ExitCode != 0 || r.Bytes < size {
			b.Fatalf("session: %+v %v", r, err)
		}
		sessionTotal += time.Since(start)
		peak = max(peak, peakRSS(b))
		os.Remove(r.RawPath)
		os.Remove(r.TextPath)

		start = time.Now()
		if n := catInBarePty(b, data); n < size {
			b.Fatalf("bare pty gave %d bytes", n)
		}
		bareTotal += time.Since(start)
	}
	b.StopTimer()
	mb := float64(size) / (1 << 20) * float64(b.N)
	b.ReportMetric(mb/sessionTotal.Seconds(), "session-MB/s")
	b.ReportMetric(mb/bareTotal.Seconds(), "bare-pty-MB/s")
	b.ReportMetric(float64(sessionTotal)/float64(bareTotal), "session/bare")
	b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MB")
}

// writeAgentOutput writes size bytes of lines like an agent CLI prints:
// colour escapes, UTF-8, the odd spinner redraw.
func writeAgentOutput(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var line bytes.Buffer
	for i, n := 0, int64(0); n < size; i++ {
		line.Reset()
		fmt.Fprintf(&line, "\x1b[32m✓\x1b[0m step %d: read \x1b[1mfile-%d.go\x1b[22m — lorem ipsum dolor sit amet\n", i, i%97)
		if i%50 == 0 {
			line.WriteString("\r\x1b[2K\x1b[36m⠋\x1b[0m Thinking…\r\x1b[2K")
		}
		b := line.Bytes()
		if rest := size - n; int64(len(b)) > rest {
			b = b[:rest]
		}
		w.Write(b)
		n += int64(len(b))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// catInBarePty is the baseline: the same bytes through a pty with nothing
// but a reader on the master.
func catInBarePty(b *testing.B, path string) int64 {
	cmd := exec.Command("cat", path)
	ptmx, err := pty.Start(cmd)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, ptmx)
	if err != nil && !errors.Is(err, syscall.EIO) {
		b.Fatal(err)
	}
	cmd.Wait()
	ptmx.Close()
	return n
}

// resetPeakRSS resets the kernel's high-water mark of this process's RSS
// (Linux 4.0+), so the next peakRSS covers only what follows.
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Logf("cannot reset peak RSS: %v", err)
	}
}

// peakRSS returns VmHWM in bytes.
func peakRSS(b *testing.B) int64 {
	s, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(s), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmHWM in /proc/self/status")
	return 0
}
