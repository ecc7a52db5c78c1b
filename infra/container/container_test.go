// Package container checks the repository's Dockerfile without a container
// engine: it runs the build stage's steps on a clean copy of the source,
// checks that they make the same bytes as `make static` and a static
// binary, and runs that binary the way the final stage's configuration
// does, with PORT set as Cloud Run sets it.
package container

import (
	"bufio"
	"crypto/sha256"
	"debug/elf"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testproc"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
}

type stage struct {
	from, name string
	steps      []instruction
}

func parseDockerfile(t *testing.T, path string) []stage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stages []stage
	var line strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if line.Len() == 0 && (l == "" || strings.HasPrefix(l, "#")) {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			line.WriteString(strings.TrimSuffix(l, "\\") + " ")
			continue
		}
		line.WriteString(l)
		cmd, args, _ := strings.Cut(strings.TrimSpace(line.String()), " ")
		line.Reset()
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			s := stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("%s: %s before FROM", path, in.cmd)
		}
		stages[len(stages)-1].steps = append(stages[len(stages)-1].steps, in)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return stages
}

func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// copyTracked copies the repository's files that git tracks (a clean
// clone's, as COPY . . sends them) and returns how many it copied.
func copyTracked(t *testing.T, root, dst string, only ...string) int {
	t.Helper()
	args := append([]string{"-C", root, "ls-files", "-z", "--"}, only...)
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	n := 0
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if f == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

func sum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// exec form ["a", "b"] of ENTRYPOINT and CMD.
func execForm(t *testing.T, args string) []string {
	t.Helper()
	var out []string
	if err := json.Unmarshal([]byte(args), &out); err != nil {
		t.Fatalf("ENTRYPOINT %s is not in exec form: %v", args, err)
	}
	return out
}

func TestDockerfile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary twice")
	}
	root := repoRoot(t)
	stages := parseDockerfile(t, filepath.Join(root, "Dockerfile"))
	if len(stages) != 2 {
		t.Fatalf("%d stages, want a build stage and the image", len(stages))
	}
	build, final := stages[0], stages[1]

	// The builder's Go is the go.mod's release.
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if m == nil || !strings.HasPrefix(build.from, "golang:"+string(m[1])+"-") {
		t.Errorf("build stage FROM %s, want golang:%s-… (go.mod's release)", build.from, m[1])
	}

	// Run the build stage's steps on a clean copy of the source.
	src := filepath.Join(t.TempDir(), "src")
	env := append(os.Environ(), "CGO_ENABLED=")
	workdir := ""
	for _, in := range build.steps {
		switch in.cmd {
		case "WORKDIR":
			workdir = in.args
		case "COPY":
			f := strings.Fields(in.args)
			if f[len(f)-1] == "./" && len(f) > 2 {
				copyTracked(t, root, src, f[:len(f)-1]...)
			} else if strings.Join(f, " ") == ". ." {
				if copyTracked(t, root, src) < 10 {
					t.Fatal("COPY . . copied almost nothing")
				}
			} else {
				t.Fatalf("build stage COPY %s: the test does not know this form", in.args)
			}
		case "ARG":
			name, def, _ := strings.Cut(in.args, "=")
			env = append(env, name+"="+strings.Trim(def, `"`))
		case "RUN":
			cmd := exec.Command("sh", "-c", in.args)
			cmd.Dir, cmd.Env = src, env
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("RUN %s: %v\n%s", in.args, err, out)
			}
		default:
			t.Fatalf("build stage %s: the test does not know this instruction", in.cmd)
		}
	}
	if workdir != "/src" {
		t.Fatalf("build stage WORKDIR %q, want /src (the test maps it to its copy)", workdir)
	}

	// The image's binary: what the final stage copies from the build stage.
	var artefact, entry []string
	imageEnv := map[string]string{}
	user := ""
	for _, in := range final.steps {
		switch in.cmd {
		case "COPY":
			f := strings.Fields(in.args)
			if len(f) == 3 && f[0] == "--from="+build.name {
				artefact = f[1:]
			}
		case "ENTRYPOINT":
			entry = execForm(t, in.args)
		case "USER":
			user = in.args
		case "ENV":
			for _, kv := range strings.Fields(in.args) {
				k, v, _ := strings.Cut(kv, "=")
				imageEnv[k] = v
			}
		}
	}
	if !strings.Contains(final.from, "distroless/static") && final.from != "scratch" {
		t.Errorf("image FROM %s, want a static base (distroless/static or scratch)", final.from)
	}
	if user == "" || user == "0" || strings.HasPrefix(user, "0:") || user == "root" {
		t.Errorf("image USER %q, want a non-root user", user)
	}
	if len(artefact) != 2 || !strings.HasPrefix(artefact[0], "/src/") {
		t.Fatalf("image COPY --from=%s %v: want one file from /src", build.name, artefact)
	}
	if len(entry) < 2 || entry[0] != artefact[1] || entry[1] != "serve" {
		t.Errorf("ENTRYPOINT %v, want [%s serve …]", entry, artefact[1])
	}
	bin := filepath.Join(src, strings.TrimPrefix(artefact[0], "/src/"))

	// The same bytes as `make static` in the repository itself.
	ref := filepath.Join(t.TempDir(), "sluice-static")
	cmd := exec.Command("make", "-s", "static", "STATIC="+ref)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make static: %v\n%s", err, out)
	}
	if a, b := sum(t, bin), sum(t, ref); a != b {
		t.Errorf("the Dockerfile's binary (sha256 %s) differs from make static's (%s)", a, b)
	}

	// Static: no program interpreter, so it runs on a base without libc.
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s asks for a program interpreter: not static", bin)
		}
	}
	ef.Close()

	// Run as the image would, with PORT set as Cloud Run sets it: it must
	// listen on that port on every interface.
	port := testproc.FreePort(t)
	run := exec.Command(bin, entry[1:]...)
	run.Dir = t.TempDir()
	run.Env = []string{"PORT=" + port, "HOME=" + run.Dir, "SLUICE_STORE=mem://"}
	for k, v := range imageEnv {
		run.Env = append(run.Env, k+"="+v)
	}
	stdout := &testproc.Output{}
	run.Stdout, run.Stderr = stdout, stdout
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = run.Process.Kill(); _ = run.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stdout.String(), "sluice listening on") {
		if time.Now().After(deadline) {
			t.Fatalf("not listening after 20 s:\n%s", stdout.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if want := "sluice listening on http://[::]:" + port; !strings.Contains(stdout.String(), want) {
		t.Errorf("want %q (PORT, all interfaces) in:\n%s", want, stdout.String())
	}
	resp, err := http.Get("http://127.0.0.1:" + port + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/healthz: %d", resp.StatusCode)
	}
}
