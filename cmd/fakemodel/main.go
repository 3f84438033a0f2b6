// Command fakemodel runs the scripted fake model server (package
// modelserver) on loopback, for demos and for driving a real agent CLI by
// hand. It prints its base URL on stdout, logs each request on stderr, and
// runs until interrupted.
//
//	fakemodel --script script.json
//	ANTHROPIC_BASE_URL=$URL ANTHROPIC_API_KEY=x claude -p hi
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/walkie-sh/walkie/cmd/fakemodel/modelserver"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fakemodel:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:0", "loopback `address` to listen on")
	scriptPath := flag.String("script", "", "JSON script `file` of replies per vendor (anthropic, openai, gemini, default); empty answers every call with a placeholder text")
	dump := flag.Bool("dump", false, "log each request's JSON body on stderr too")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}

	var script modelserver.Script
	if *scriptPath != "" {
		s, err := modelserver.LoadScript(*scriptPath)
		if err != nil {
			return err
		}
		script = s
	}
	srv, err := modelserver.Listen(*listen, script)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Println(srv.URL)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Log requests as they arrive by polling the log; the server itself has
	// no logging hook because tests read the log directly.
	seen := 0
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		reqs := srv.Requests()
		for _, r := range reqs[seen:] {
			line := fmt.Sprintf("%s %s %s", r.At.Format(time.RFC3339Nano), r.Method, r.Path)
			if r.Vendor != "" {
				line += fmt.Sprintf(" vendor=%s model=%s stream=%t reply=%q exhausted=%t", r.Vendor, r.Model, r.Stream, r.Reply.Kind()+" "+r.Reply.Text+r.Reply.Command, r.Exhausted)
			}
			fmt.Fprintln(os.Stderr, line)
			if *dump && r.Body != nil {
				b, _ := json.Marshal(r.Body)
				fmt.Fprintln(os.Stderr, string(b))
			}
		}
		seen = len(reqs)
	}
}
