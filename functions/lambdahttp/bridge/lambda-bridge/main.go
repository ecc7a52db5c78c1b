// Command lambda-bridge serves sluice's Lambda function on a local port as
// one AWS front end would, to run any SQS client through it:
//
//	go run ./functions/lambdahttp/bridge/lambda-bridge -front-end alb-multi
//	SLUICE_ENDPOINT=http://127.0.0.1:9325 SUITES="py-json js" bash infra/clients/run.sh
//
// It builds the Lambda Runtime Interface Emulator and the bootstrap (run
// it from within the module), starts the function under the emulator and
// wraps each request into the front end's event (see package bridge).
// Queue URLs name the bridge's own address, so that clients that send to
// them come back through it. The function's environment is this process's
// plus SLUICE_STORE (-store), and SLUICE_AUTH=none unless SLUICE_AUTH or
// access keys are set (SLUICE_ACCESS_KEYS=test:test checks the suites'
// signatures).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/functions/lambdahttp/bridge"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9325", "listen address")
	fe := flag.String("front-end", string(bridge.FunctionURL), "front end: "+joined(bridge.FrontEnds))
	store := flag.String("store", "mem://", "SLUICE_STORE of the function")
	rie := flag.String("rie", "", "aws-lambda-rie binary (default: build it)")
	bootstrap := flag.String("bootstrap", "", "bootstrap binary (default: build it)")
	verbose := flag.Bool("v", false, "show the emulator's and the function's output")
	n := flag.Int("environments", 1, "execution environments serving at once (more than one needs a shared -store: postgres://...)")
	flag.Parse()
	if !known(bridge.FrontEnd(*fe)) {
		log.Fatalf("unknown -front-end %q: use %s", *fe, joined(bridge.FrontEnds))
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "lambda-bridge-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if *rie == "" {
		if *rie, err = bridge.BuildRIE(ctx, dir); err != nil {
			log.Fatal(err)
		}
	}
	if *bootstrap == "" {
		if *bootstrap, err = bridge.BuildBootstrap(ctx, dir); err != nil {
			log.Fatal(err)
		}
	}
	out := os.Stderr
	if !*verbose {
		out = nil
	}
	env := []string{"SLUICE_STORE=" + *store}
	if os.Getenv("SLUICE_AUTH") == "" && os.Getenv("SLUICE_ACCESS_KEYS") == "" && os.Getenv("SLUICE_ACCESS_KEYS_FILE") == "" {
		// The function refuses to start without keys unless told to check
		// none; export SLUICE_ACCESS_KEYS=test:test to have clients' signatures
		// checked.
		env = append(env, "SLUICE_AUTH=none")
	}
	opts := bridge.FunctionOptions{RIE: *rie, Bootstrap: *bootstrap, Env: env}
	if out != nil {
		opts.Log = out
	}
	if *n < 1 || (*n > 1 && strings.HasPrefix(*store, "mem")) {
		log.Fatalf("bad -environments %d: one, or more over a shared store", *n)
	}
	var fns []*bridge.Function
	for range *n {
		fn, err := bridge.StartFunction(ctx, opts)
		if err != nil {
			log.Fatal(err)
		}
		defer fn.Close()
		fns = append(fns, fn)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	b := &bridge.Bridge{FrontEnd: bridge.FrontEnd(*fe), Function: bridge.NewPool(fns...),
		Public: bridge.Public{Host: ln.Addr().String(), Proto: "http"}}
	srv := &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	fmt.Printf("lambda bridge (%s) listening on http://%s, %d environments\n", *fe, ln.Addr(), *n)
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		log.Print(err)
	}
	fmt.Printf("%d events, %d with a base64 body\n", b.Events.Load(), b.Base64Events.Load())
}

func known(f bridge.FrontEnd) bool {
	for _, k := range bridge.FrontEnds {
		if k == f {
			return true
		}
	}
	return false
}

func joined(fs []bridge.FrontEnd) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}
