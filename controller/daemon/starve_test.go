package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// helperEnv, when set, makes the test binary a daemon of its own (see
// helperMain); its value is the helperSpec as JSON.
const helperEnv = "WALKIE_DAEMON_TEST_HELPER"

type helperSpec struct {
	Dir, Config string
	NoFile      uint64 // RLIMIT_NOFILE, soft and hard
}

// helperMain is `walkie serve` in a process of its own, under the
// descriptor limit the test gives it, with Options the binary does not
// expose. It prints its address, then obeys lines on stdin: "hog" opens
// descriptors until none is left, "release" closes them. At the end of
// its input it stops.
func helperMain() int {
	var spec helperSpec
	if err := json.Unmarshal([]byte(os.Getenv(helperEnv)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	// Hard and soft: the Go runtime raises the soft limit to the hard one.
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: spec.NoFile, Max: spec.NoFile}); err != nil {
		fmt.Fprintln(os.Stderr, "helper: setrlimit:", err)
		return 1
	}
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.Lock(os.Stderr), zap.InfoLevel))
	cfg, err := config.Load(spec.Config)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	d, err := New(Options{Dir: spec.Dir, Config: cfg, Listen: "127.0.0.1:0", Log: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	// Ready only once Run serves (its file watcher is made before the
	// listener answers): a "hog" that came sooner would starve the
	// daemon's own start, not the debate the test drops in.
	for {
		resp, err := http.Get("http://" + d.Addr() + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Printf("addr %s\n", d.Addr())
	var hog []*os.File
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "hog":
			var err error
			for {
				var f *os.File
				if f, err = os.Open(os.DevNull); err != nil {
					break
				}
				hog = append(hog, f)
			}
			fmt.Printf("hogged %d (%v)\n", len(hog), err)
		case "release":
			for _, f := range hog {
				f.Close()
			}
			hog = nil
			fmt.Println("released")
		}
	}
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	return 0
}

// helperDaemon is a running helperMain.
type helperDaemon struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	addr string

	mu   sync.Mutex
	logs []string
	eof  chan struct{} // stderr closed
}

func startHelperDaemon(t *testing.T, spec helperSpec) *helperDaemon {
	t.Helper()
	js, _ := json.Marshal(spec)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+string(js))
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helperDaemon{cmd: cmd, in: in, out: bufio.NewScanner(out), eof: make(chan struct{})}
	go func() {
		defer close(h.eof)
		sc := bufio.NewScanner(errs)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			h.mu.Lock()
			h.logs = append(h.logs, sc.Text())
			h.mu.Unlock()
		}
	}()
	t.Cleanup(func() { h.stop(t) })
	line := h.reply(t)
	if !strings.HasPrefix(line, "addr ") {
		t.Fatalf("helper daemon said %q, want its address", line)
	}
	h.addr = strings.TrimPrefix(line, "addr ")
	return h
}

// reply is the helper's next line on stdout.
func (h *helperDaemon) reply(t *testing.T) string {
	t.Helper()
	if !h.out.Scan() {
		<-h.eof
		t.Fatalf("the helper daemon ended (%v); its log:\n%s", h.out.Err(), strings.Join(h.lines(), "\n"))
	}
	return h.out.Text()
}

func (h *helperDaemon) send(t *testing.T, cmd string) string {
	t.Helper()
	if _, err := fmt.Fprintln(h.in, cmd); err != nil {
		t.Fatal(err)
	}
	return h.reply(t)
}

func (h *helperDaemon) lines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.logs...)
}

func (h *helperDaemon) logged(substr string) bool {
	for _, l := range h.lines() {
		if strings.Contains(l, substr) {
			return true
		}
	}
	return false
}

// stop ends the helper: end of input, then it drains and exits.
func (h *helperDaemon) stop(t *testing.T) {
	if h.in == nil {
		return
	}
	h.in.Close()
	h.in = nil
	exited := make(chan error, 1)
	go func() { <-h.eof; exited <- h.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("helper daemon: %v; its log:\n%s", err, strings.Join(h.lines(), "\n"))
		}
	case <-time.After(30 * time.Second):
		_ = h.cmd.Process.Kill()
		<-exited
		t.Errorf("the helper daemon did not stop within 30s")
	}
}

func writeConfig(t *testing.T, agents ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "walkie.yaml")
	if err := os.WriteFile(p, []byte(configYAML(agents, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Issue 12, item 6: a debate that could not be read because the process
// was out of descriptors was parked "until something changes" and never
// ran, though nothing about the record was wrong. It must be retried with
// backoff and run once descriptors are free again, with no event to wake
// it.
func TestDaemonRetriesWhenOutOfDescriptors(t *testing.T) {
	dir := t.TempDir()
	h := startHelperDaemon(t, helperSpec{Dir: dir, NoFile: 128,
		Config: writeConfig(t, fakeAgent("fa", "--sign-from", "2"), fakeAgent("fb", "--sign-from", "2"))})
	if got := h.send(t, "hog"); !strings.HasPrefix(got, "hogged ") || !strings.Contains(got, "too many open files") {
		t.Fatalf("hog: %q", got)
	}
	file := newDebate(t, dir, "emfile", 3, "fa", "fb")
	sessiontest.WaitFor(t, 30*time.Second, "the daemon met EMFILE reading the new debate", func() bool {
		return h.logged("too many open files") && h.logged("emfile.walkie.md")
	})
	if got := h.send(t, "release"); got != "released" {
		t.Fatalf("release: %q", got)
	}
	released := time.Now()
	sessiontest.WaitFor(t, time.Minute, "the debate ran once descriptors were free", func() bool {
		return status(t, file) == walkie.StatusConverged && settled(t, file)
	})
	t.Logf("converged %v after the descriptors were released", time.Since(released).Round(time.Millisecond))
	checkRecord(t, file)
}

// transient tells the machine's trouble from the record's, through any
// wrapping, including the controller's ErrBadInput around a failed read.
func TestTransient(t *testing.T) {
	emfile := &fs.PathError{Op: "open", Path: "x.walkie.md", Err: syscall.EMFILE}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{emfile, true},
		{fmt.Errorf("%w: %w", controller.ErrBadInput, emfile), true},
		{fmt.Errorf("load: %w", &fs.PathError{Op: "read", Path: "x", Err: syscall.EIO}), true},
		{&fs.PathError{Op: "open", Path: "x", Err: syscall.ENFILE}, true},
		{&fs.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}, true},
		{&fs.PathError{Op: "open", Path: "x", Err: syscall.ENOENT}, false},
		{&fs.PathError{Op: "open", Path: "x", Err: syscall.EACCES}, false},
		{fmt.Errorf("%w: %w", controller.ErrBadInput, &walkie.InputError{File: "x", Msg: "torn tail"}), false},
		{errors.New("the record does not verify"), false},
	} {
		if got := transient(c.err); got != c.want {
			t.Errorf("transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
