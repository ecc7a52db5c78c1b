package bridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// RIEVersion is the Runtime Interface Emulator the bridge builds (the
// module proxy's pseudo-version of the repository's main branch).
const RIEVersion = "v0.0.0-20261030222936-bef5c4ba774d"

// BuildRIE builds the emulator's aws-lambda-rie into dir and returns its
// path. It needs the go tool and the module proxy (or a module cache that
// holds RIEVersion).
func BuildRIE(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "install",
		"github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@"+RIEVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOWORK=off", "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building aws-lambda-rie: %v\n%s", err, out)
	}
	return filepath.Join(dir, "aws-lambda-rie"), nil
}

// BootstrapPackage is sluice's Lambda binary.
const BootstrapPackage = "github.com/sluicehq/sluice/functions/cmd/sluice-lambda"

// BuildBootstrap builds BootstrapPackage as the provided.al2023 runtime
// wants it (a static linux binary named bootstrap, built with
// lambda.norpc), for this machine's architecture so that the emulator can
// run it. Run it from within the sluice module.
func BuildBootstrap(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "bootstrap")
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-o", out, BootstrapPackage)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the bootstrap: %v\n%s", err, b)
	}
	return out, nil
}

// Function is one execution environment: the emulator running a
// bootstrap. Like Lambda's, it serves one invocation at a time; Invoke
// queues the others.
type Function struct {
	cmd  *exec.Cmd
	url  string
	mu   sync.Mutex
	done chan struct{}
	err  error
}

// FunctionOptions say what to run.
type FunctionOptions struct {
	RIE, Bootstrap string
	// Env is added to this process's environment for the function
	// (SLUICE_STORE=mem://, ...).
	Env []string
	// Log receives the emulator's and the function's output; nil drops it.
	Log io.Writer
	// Timeout is the function timeout (AWS_LAMBDA_FUNCTION_TIMEOUT); zero
	// means 60 s.
	Timeout time.Duration
}

// StartFunction starts the emulator on free loopback ports and waits until
// it listens. The function itself starts (its init phase) at the first
// invocation, as RIE does it.
func StartFunction(ctx context.Context, o FunctionOptions) (*Function, error) {
	invokeAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	runtimeAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	cmd := exec.Command(o.RIE, "--log-level", "error",
		"--runtime-interface-emulator-address", invokeAddr,
		"--runtime-api-address", runtimeAddr, o.Bootstrap)
	cmd.Dir = filepath.Dir(o.Bootstrap)
	cmd.Env = append(os.Environ(), fmt.Sprintf("AWS_LAMBDA_FUNCTION_TIMEOUT=%d", int(timeout.Seconds())))
	cmd.Env = append(cmd.Env, o.Env...)
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group, so that Close ends the bootstrap too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", o.RIE, err)
	}
	f := &Function{cmd: cmd, url: "http://" + invokeAddr + "/2015-03-31/functions/function/invocations", done: make(chan struct{})}
	go func() { f.err = cmd.Wait(); close(f.done) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", invokeAddr, time.Second)
		if err == nil {
			c.Close()
			return f, nil
		}
		select {
		case <-f.done:
			return nil, fmt.Errorf("aws-lambda-rie exited: %v", f.err)
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("aws-lambda-rie does not listen on %s", invokeAddr)
		}
	}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Invoke sends one event and returns the function's output.
func (f *Function) Invoke(ctx context.Context, event []byte) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url, bytes.NewReader(event))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("invoking the function: %w", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: the emulator answered %s: %.300s", ErrFunction, resp.Status, out)
	}
	return out, nil
}

// Close stops the emulator and the function.
func (f *Function) Close() error {
	if f.cmd.Process != nil {
		_ = syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-f.done
	var ee *exec.ExitError
	if errors.As(f.err, &ee) {
		return nil // killed
	}
	return f.err
}
