package sysmon

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestEnvAddsTheSettingToGODEBUG(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []string
		want []string
		add  bool
	}{
		{"no GODEBUG", []string{"A=1"}, []string{"A=1", "GODEBUG=" + Setting}, true},
		{"empty GODEBUG", []string{"GODEBUG=", "A=1"}, []string{"GODEBUG=" + Setting, "A=1"}, true},
		{"other settings", []string{"GODEBUG=http2client=0"}, []string{"GODEBUG=http2client=0," + Setting}, true},
		{"schedtrace set", []string{"GODEBUG=gctrace=1,schedtrace=1000"}, []string{"GODEBUG=gctrace=1,schedtrace=1000"}, false},
		{"schedtrace=0 stands", []string{"GODEBUG=schedtrace=0"}, []string{"GODEBUG=schedtrace=0"}, false},
		{"a key that only ends like it", []string{"GODEBUG=xschedtrace=1"}, []string{"GODEBUG=xschedtrace=1," + Setting}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, add := Env(c.in)
			if add != c.add || !slices.Equal(got, c.want) {
				t.Errorf("Env(%q) = %q, %v; want %q, %v", c.in, got, add, c.want, c.add)
			}
		})
	}
}

// helperEnv makes the test binary a program that reports its process id
// and GODEBUG, calls Steady and reports again (see TestMain).
const helperEnv = "SLUICE_SYSMON_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		fmt.Printf("pid=%d godebug=%s\n", os.Getpid(), os.Getenv("GODEBUG"))
		if err := Steady(); err != nil {
			fmt.Println("error:", err)
		}
		fmt.Println("ran on")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runHelper(t *testing.T, godebug *string) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{helperEnv + "=1"}
	if godebug != nil {
		cmd.Env = append(cmd.Env, "GODEBUG="+*godebug)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

func TestSteadyStartsTheProgramAgainInPlace(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no execve on Windows: Steady returns an error there")
	}
	lines := runHelper(t, nil)
	if len(lines) != 3 || lines[2] != "ran on" {
		t.Fatalf("helper printed %q; want a report, a report after the exec, and ran on", lines)
	}
	var pid1, pid2 int
	var g1, g2 string
	fmt.Sscanf(lines[0], "pid=%d godebug=%s", &pid1, &g1)
	fmt.Sscanf(lines[1], "pid=%d godebug=%s", &pid2, &g2)
	if pid1 == 0 || pid1 != pid2 {
		t.Errorf("process ids %d and %d: want the same process", pid1, pid2)
	}
	if g1 != "" || g2 != Setting {
		t.Errorf("GODEBUG %q, then %q; want empty, then %q", g1, g2, Setting)
	}
}

func TestSteadyLeavesAnOperatorsSchedtrace(t *testing.T) {
	off := "schedtrace=0"
	lines := runHelper(t, &off)
	want := []string{fmt.Sprintf("pid=%s godebug=schedtrace=0", strings.TrimPrefix(strings.Fields(lines[0])[0], "pid=")), "ran on"}
	if !slices.Equal(lines, want) {
		t.Errorf("helper printed %q; want %q (no exec)", lines, want)
	}
}

// A Cloud Function's main is the functions framework's, so its Terraform
// module sets the variable itself: the same setting.
func TestTheCloudFunctionModuleSetsTheSameSetting(t *testing.T) {
	tf, err := os.ReadFile("../../terraform/modules/gcp-cloudfunction-service/main.tf")
	if err != nil {
		t.Fatal(err)
	}
	if want := `GODEBUG = "` + Setting + `"`; !strings.Contains(string(tf), want) {
		t.Errorf("gcp-cloudfunction-service/main.tf does not set %s", want)
	}
}
