package cloudfunction_test

// The function built and started the way Google's Go buildpack for Cloud
// Functions does it (GoogleCloudPlatform/buildpacks, cmd/go/functions_framework
// and cmd/go/build), step by step:
//
//  1. The uploaded source (the module's root) is moved into a directory
//     of its own; its top-level .go files must make exactly one package,
//     which is not main. When that package imports the Framework's
//     functions package, the function registers itself by name and the
//     generated main only imports it.
//  2. go.mod is there, so this is a modules build: `go list -m` names the
//     module (its first element must hold a dot), which is the import path
//     of the function's package; `go list -m` of the Framework gives the
//     version the source asks for (none: the buildpack would add one).
//  3. A main package is written at functions.local/app inside the source,
//     `go mod tidy` runs there, and `go build` builds that directory.
//  4. The platform runs the binary with PORT and FUNCTION_TARGET (the
//     entry point) set; the Framework serves the registered function at /.
//
// The main is written here from what the buildpack's template does:
// import the function's package for its init, then funcframework.Start on
// PORT (default 8080).

import (
	"bufio"
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testproc"
)

const frameworkModule = "github.com/GoogleCloudPlatform/functions-framework-go"

// generatedMain is the buildpack's main for a function that registers
// itself (its "declarative" template), for the package pkg.
func generatedMain(pkg string) string {
	return `// Code generated as the Cloud Functions Go buildpack does; DO NOT EDIT.
package main

import (
	"log"
	"net/http"
	"os"

	_ "` + pkg + `"

	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"
)

func main() {
	// As the buildpack's main: reserved paths on the default mux, which
	// the Framework's own mux does not consult.
	http.HandleFunc("/robots.txt", http.NotFound)
	http.HandleFunc("/favicon.ico", http.NotFound)
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	if err := funcframework.Start(port); err != nil {
		log.Fatalf("Function failed to start: %v\n", err)
	}
}
`
}

// skipped are the directories the upload leaves out (.gitignore, which
// .gcloudignore includes, and .git), for when gcloud is not installed.
var skipped = map[string]bool{".git": true, "bin": true, ".tmp": true, "node_modules": true, "sluice-data": true}

var (
	buildOnce sync.Once
	buildDir  string // removed by TestMain
	builtBin  string
	buildErr  error
	buildLog  bytes.Buffer
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// functionBinary builds the function as the buildpack would, once per test
// binary, and returns its path.
func functionBinary(t *testing.T) string {
	t.Helper()
	gobin := goTool(t)
	buildOnce.Do(func() {
		start := time.Now()
		builtBin, buildErr = buildLikeBuildpack(gobin, &buildLog)
		t.Logf("built as the buildpack does in %s:\n%s", time.Since(start).Round(time.Second), buildLog.String())
	})
	if buildErr != nil {
		t.Fatalf("building the function as the buildpack does: %v\n%s", buildErr, buildLog.String())
	}
	return builtBin
}

// TestFunctionKeep copies the built function to $SLUICE_KEEP_FUNCTION, to
// run it by hand (the client suites against it, see
// docs/cloudfunctions.md).
func TestFunctionKeep(t *testing.T) {
	dst := os.Getenv("SLUICE_KEEP_FUNCTION")
	if dst == "" {
		t.Skip("SLUICE_KEEP_FUNCTION is not set")
	}
	b, err := os.ReadFile(functionBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	// A new file renamed over dst: dst may be running.
	if err := os.WriteFile(dst+".new", b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dst+".new", dst); err != nil {
		t.Fatal(err)
	}
}

func goTool(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no go tool on PATH: %v", err)
		}
		t.Skipf("no go tool on PATH: %v", err)
	}
	return gobin
}

func buildLikeBuildpack(gobin string, log io.Writer) (string, error) {
	run := func(dir string, args ...string) (string, error) {
		cmd := exec.Command(gobin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64") // as the buildpack builds
		var out, errs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errs
		err := cmd.Run()
		fmt.Fprintf(log, "$ go %s\n%s", strings.Join(args, " "), errs.String())
		if err != nil {
			return "", fmt.Errorf("go %s: %v", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(out.String()), nil
	}
	root, err := run(".", "list", "-m", "-f", "{{.Dir}}")
	if err != nil {
		return "", err
	}
	work, err := os.MkdirTemp("", "sluice-gcf-")
	if err != nil {
		return "", err
	}
	buildDir = work
	src := filepath.Join(work, "workspace", "serverless_function_source_code")
	files, how, err := uploadedFiles(root)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(log, "uploading %d files (%s)\n", len(files), how)
	if err := copyFiles(root, src, files); err != nil {
		return "", err
	}

	// 1. One package at the root of the source, not main, declaring itself.
	pkgs, err := parser.ParseDir(token.NewFileSet(), src, nil, parser.ImportsOnly)
	if err != nil {
		return "", fmt.Errorf("parsing the source's root: %v", err)
	}
	if len(pkgs) != 1 {
		names := []string{}
		for n := range pkgs {
			names = append(names, n)
		}
		return "", fmt.Errorf("the buildpack wants one package at the source's root, found %q", names)
	}
	for name, p := range pkgs {
		if name == "main" {
			return "", fmt.Errorf("the function's package is main")
		}
		declares := false
		for _, f := range p.Files {
			for _, im := range f.Imports {
				declares = declares || strings.Trim(im.Path.Value, `"`) == frameworkModule+"/functions"
			}
		}
		if !declares {
			return "", fmt.Errorf("package %s does not import %s/functions: the buildpack would call an exported function instead", name, frameworkModule)
		}
	}

	// 2. The module, and the Framework's version it asks for.
	mod, err := run(src, "list", "-m")
	if err != nil {
		return "", err
	}
	if first, _, _ := strings.Cut(mod, "/"); !strings.Contains(first, ".") {
		return "", fmt.Errorf("module path %q: the buildpack wants a dot in its first element", mod)
	}
	if v, err := run(src, "list", "-m", "-f", "{{.Version}}", frameworkModule); err != nil || v == "" {
		return "", fmt.Errorf("go.mod does not require %s (%v): the buildpack would inject it", frameworkModule, err)
	}

	// 3. The generated main, tidy, build.
	mainDir := filepath.Join(src, "functions.local", "app")
	if err := os.MkdirAll(mainDir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(mainDir, "main.go"), []byte(generatedMain(mod)), 0o644); err != nil {
		return "", err
	}
	if _, err := run(src, "mod", "tidy"); err != nil {
		return "", err
	}
	bin := filepath.Join(work, "main")
	if _, err := run(src, "build", "-o", bin, mainDir); err != nil {
		return "", err
	}
	return bin, nil
}

// uploadedFiles lists the files, relative to root, that `gcloud functions
// deploy --source root` uploads: what `gcloud meta list-files-for-upload`
// says (it applies .gcloudignore) when gcloud is installed, else every
// file outside the directories .gitignore names.
func uploadedFiles(root string) ([]string, string, error) {
	if gcloud, err := exec.LookPath("gcloud"); err == nil {
		cfg, err := os.MkdirTemp("", "gcloud-config-")
		if err != nil {
			return nil, "", err
		}
		defer os.RemoveAll(cfg)
		cmd := exec.Command(gcloud, "meta", "list-files-for-upload", root)
		cmd.Env = append(os.Environ(), "CLOUDSDK_CONFIG="+cfg, "CLOUDSDK_CORE_DISABLE_PROMPTS=1",
			"CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=1")
		out, err := cmd.Output()
		if err != nil {
			return nil, "", fmt.Errorf("gcloud meta list-files-for-upload: %v", err)
		}
		return strings.Fields(string(out)), "as gcloud lists them, .gcloudignore applied", nil
	}
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && skipped[d.Name()] && rel != "." {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			files = append(files, rel)
		}
		return nil
	})
	return files, "no gcloud: every file but " + fmt.Sprint(len(skipped)) + " ignored directories", err
}

// copyFiles copies files from root to dst.
func copyFiles(root, dst string, files []string) error {
	for _, rel := range files {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// function is a running instance of the built function.
type function struct {
	URL  string
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{}
	err  error // of Wait, once done is closed
}

// startFunction runs the built function as the platform does: PORT and
// FUNCTION_TARGET set, K_SERVICE too (the Framework flushes logs after
// each request when it is), with the test's access key, and env on top.
func startFunction(t *testing.T, env ...string) *function {
	t.Helper()
	bin := functionBinary(t)
	port := testproc.FreePort(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PORT="+port, "FUNCTION_TARGET=Sluice", "K_SERVICE=sluice",
		"K_REVISION=sluice-00001-abc", "SLUICE_LOG_LEVEL=debug", "SLUICE_ACCESS_KEYS="+testKeyID+":"+testSecret)
	cmd.Env = append(cmd.Env, env...)
	f := &function{URL: "http://127.0.0.1:" + port, cmd: cmd, logs: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = f.logs, f.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { f.err = cmd.Wait(); close(f.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-f.done
		if t.Failed() {
			t.Logf("function logs:\n%s", f.logs.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		if err == nil {
			c.Close()
			return f
		}
		select {
		case <-f.done:
			t.Fatalf("the function exited before listening (%v):\n%s", f.err, f.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the function does not listen on %s:\n%s", port, f.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// syncBuffer collects a process's output for several readers.
type syncBuffer struct{ testproc.Output }

// waitLines returns the log lines that contain all of words, once there
// is one (the process's output reaches the buffer through a pipe, after
// the answer may have) and a little more time has passed for any others,
// or after 5 s.
func (s *syncBuffer) waitLines(words ...string) []string {
	deadline := time.Now().Add(5 * time.Second)
	for len(s.lines(words...)) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	return s.lines(words...)
}

// lines returns the log lines that contain all of words.
func (s *syncBuffer) lines(words ...string) []string {
	var found []string
	sc := bufio.NewScanner(strings.NewReader(s.String()))
	for sc.Scan() {
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(sc.Text(), w)
		}
		if ok {
			found = append(found, sc.Text())
		}
	}
	return found
}
