package systemtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// sluiceBin is the sluice binary under test, built once by TestMain from
// this checkout, or the one SLUICE_SYSTEMTEST_BIN names.
var sluiceBin string

// binRace tells whether sluiceBin was built with the race detector.
var binRace bool

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	if bin := os.Getenv("SLUICE_SYSTEMTEST_BIN"); bin != "" {
		// A binary built elsewhere (a release artifact, another checkout).
		if _, err := os.Stat(bin); err != nil {
			fmt.Fprintln(os.Stderr, "systemtest: SLUICE_SYSTEMTEST_BIN:", err)
			return 1
		}
		sluiceBin = bin
		binRace = os.Getenv("SLUICE_SYSTEMTEST_RACE") == "1"
		fmt.Fprintf(os.Stderr, "systemtest: testing %s\n", bin)
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "sluice-systemtest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "systemtest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binRace = raceEnabled
	switch os.Getenv("SLUICE_SYSTEMTEST_RACE") {
	case "1", "true":
		binRace = true
	case "0", "false":
		binRace = false
	}
	bin := filepath.Join(dir, "sluice")
	args := []string{"build", "-o", bin}
	if binRace {
		args = append(args, "-race")
	}
	args = append(args, "./functions/cmd/sluice")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	cmd := exec.Command(goTool, args...)
	cmd.Dir = filepath.Join("..", "..") // the module root, from infra/systemtest
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "systemtest: go %v: %v\n%s", args, err, out)
		return 1
	}
	fmt.Fprintf(os.Stderr, "systemtest: built sluice (race=%v) in %s\n", binRace, time.Since(start).Round(time.Millisecond))
	sluiceBin = bin
	return m.Run()
}
