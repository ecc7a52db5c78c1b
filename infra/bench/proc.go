package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ServerStats describe the server process.
type ServerStats struct {
	PID          int      `json:"pid"`
	Spawned      bool     `json:"spawned,omitempty"`
	Store        string   `json:"store,omitempty"`       // the store URL it was started with, password redacted
	PeakRSSBytes int64    `json:"peak_rss_bytes"`        // VmHWM at the end of the run
	LogLines     int      `json:"log_lines,omitempty"`   // lines it wrote to stderr (it runs at --log-level warn)
	LogSamples   []string `json:"log_samples,omitempty"` // the first few of them
	ExitCode     int      `json:"exit_code,omitempty"`
}

// CPUStats is CPU use over the measured window, in cores (1.0 = one CPU
// busy the whole time).
type CPUStats struct {
	CPUs           int     `json:"cpus"`
	MachineBusyPct float64 `json:"machine_busy_pct"` // of all CPUs
	MachineCores   float64 `json:"machine_cores"`
	BenchCores     float64 `json:"bench_cores"`            // this process (the load generator)
	ServerCores    float64 `json:"server_cores,omitempty"` // the server process, when its pid is known
	OtherCores     float64 `json:"other_cores"`            // the rest: PostgreSQL, the OS, ...
	// Others are the busiest other processes, by command name (PostgreSQL
	// backends add up under "postgres"); a process that ended within the
	// window counts under its parent, which waited for it. What is left of
	// OtherCores is the kernel's own work.
	Others []ProcCPU `json:"others,omitempty"`
}

// ProcCPU is the CPU use of the processes with one command name.
type ProcCPU struct {
	Name  string  `json:"name"`
	Cores float64 `json:"cores"`
}

// PeakRSS reads VmHWM (the peak resident set size) of process pid.
func PeakRSS(pid int) (int64, error) {
	return procStatusField(pid, "VmHWM:")
}

func procStatusField(pid int, field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, field); ok {
			f := strings.Fields(rest)
			if len(f) < 1 {
				break
			}
			v, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status: bad %s %q", pid, field, rest)
			}
			if len(f) > 1 && strings.EqualFold(f[1], "kB") {
				v *= 1024
			}
			return v, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, field)
}

type cpuSnap struct {
	at                 time.Time
	busy, total        uint64 // machine, clock ticks
	self               time.Duration
	server             time.Duration
	cpus               int // cpuN lines in /proc/stat
	haveMachine, haveS bool
	procs              map[int]procTime
	serverPID          int
}

type procTime struct {
	comm string
	ppid int
	cpu  time.Duration
	// reaped is the CPU time of the children it has waited for: what a
	// process that started and ended between two snapshots (a parallel
	// worker, an autovacuum worker) leaves behind.
	reaped time.Duration
}

// procTimes reads the command name and CPU time of every process.
func procTimes() map[int]procTime {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make(map[int]procTime, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		p, err := parseStat(data)
		if err != nil {
			continue
		}
		out[pid] = p
	}
	return out
}

// USER_HZ, the unit of /proc's tick counts, is 100 on every Linux ABI Go
// supports.
const userHZ = 100

func takeCPUSnap(serverPID int) cpuSnap {
	s := cpuSnap{at: time.Now(), serverPID: serverPID}
	if data, err := os.ReadFile("/proc/stat"); err == nil {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		for l := range bytes.SplitSeq(rest, []byte("\n")) {
			if len(l) > 3 && bytes.HasPrefix(l, []byte("cpu")) && l[3] >= '0' && l[3] <= '9' {
				s.cpus++
			}
		}
		f := strings.Fields(string(line))
		if len(f) >= 9 && f[0] == "cpu" {
			var v [8]uint64
			for i := range v {
				v[i], _ = strconv.ParseUint(f[i+1], 10, 64)
				s.total += v[i]
			}
			s.busy = v[0] + v[1] + v[2] + v[5] + v[6] // user, nice, system, irq, softirq (not idle, iowait, steal)
			s.haveMachine = true
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if serverPID > 0 {
		if d, err := procCPU(serverPID); err == nil {
			s.server, s.haveS = d, true
		}
	}
	s.procs = procTimes()
	return s
}

// procCPU is the user+system CPU time of process pid.
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	p, err := parseStat(data)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return p.cpu, nil
}

var errStatFormat = errors.New("unexpected format")

// parseStat reads the command name, parent pid, user+system CPU time and
// that of the children it waited for from the contents of /proc/PID/stat.
func parseStat(data []byte) (procTime, error) {
	open := bytes.IndexByte(data, '(')
	i := bytes.LastIndexByte(data, ')')
	if open < 0 || i < open {
		return procTime{}, errStatFormat
	}
	f := strings.Fields(string(data[i+1:]))
	// After "(comm)": state is field 3, ppid 4; utime, stime, cutime and
	// cstime are fields 14 to 17.
	if len(f) < 15 {
		return procTime{}, errStatFormat
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procTime{}, errStatFormat
	}
	var ticks [4]uint64
	for k := range ticks {
		if ticks[k], err = strconv.ParseUint(f[11+k], 10, 64); err != nil {
			return procTime{}, errStatFormat
		}
	}
	tick := time.Second / userHZ
	return procTime{comm: string(data[open+1 : i]), ppid: ppid,
		cpu: time.Duration(ticks[0]+ticks[1]) * tick, reaped: time.Duration(ticks[2]+ticks[3]) * tick}, nil
}

// procGroup names what a process's CPU is reported under: its command
// name, except that a PostgreSQL backend counts under its postmaster,
// named by its data directory, so that two clusters on one machine are
// told apart.
func procGroup(procs map[int]procTime, pid int) string {
	p := procs[pid]
	if p.comm != "postgres" {
		return p.comm
	}
	root := pid
	for range 4 {
		pp, ok := procs[procs[root].ppid]
		if !ok || pp.comm != "postgres" {
			break
		}
		root = procs[root].ppid
	}
	if cl, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", root)); err == nil {
		args := strings.Split(string(cl), "\x00")
		for i, a := range args {
			if a == "-D" && i+1 < len(args) {
				return "postgres " + args[i+1]
			}
		}
	}
	return fmt.Sprintf("postgres (postmaster %d)", root)
}

// cpuBetween is the CPU use between two snapshots. Others keeps the five
// busiest process groups and every group named in keep, however idle.
func cpuBetween(a, b cpuSnap, keep ...string) *CPUStats {
	wall := b.at.Sub(a.at).Seconds()
	if wall <= 0 {
		return nil
	}
	c := &CPUStats{CPUs: b.cpus}
	if c.CPUs == 0 {
		c.CPUs = runtime.NumCPU()
	}
	if a.haveMachine && b.haveMachine && b.total > a.total {
		frac := float64(b.busy-a.busy) / float64(b.total-a.total)
		c.MachineBusyPct = 100 * frac
		c.MachineCores = frac * float64(c.CPUs)
	}
	c.BenchCores = (b.self - a.self).Seconds() / wall
	if a.haveS && b.haveS {
		c.ServerCores = (b.server - a.server).Seconds() / wall
	}
	c.OtherCores = max(c.MachineCores-c.BenchCores-c.ServerCores, 0)
	self := os.Getpid()
	byName := map[string]time.Duration{}
	for pid, pb := range b.procs {
		if pid == self || (a.haveS && pid == b.serverPID) {
			continue
		}
		d := pb.cpu
		if pa, ok := a.procs[pid]; ok && pa.comm == pb.comm {
			d -= pa.cpu
			d += pb.reaped - pa.reaped // children that ended in the window
		}
		if d > 0 {
			byName[procGroup(b.procs, pid)] += d
		}
	}
	// A child that ended in the window is in its parent's reaped time
	// whole; what it had used before the window is not the window's.
	for pid, pa := range a.procs {
		if _, ok := b.procs[pid]; ok || pid == self || pid == a.serverPID {
			continue
		}
		if parent, ok := b.procs[pa.ppid]; ok {
			if before, ok := a.procs[pa.ppid]; ok && before.comm == parent.comm {
				byName[procGroup(b.procs, pa.ppid)] -= pa.cpu + pa.reaped
			}
		}
	}
	var kept []ProcCPU
	for name, d := range byName {
		cores := max(d, 0).Seconds() / wall
		if slices.Contains(keep, name) {
			kept = append(kept, ProcCPU{Name: name, Cores: cores})
		} else if cores >= 0.01 {
			c.Others = append(c.Others, ProcCPU{Name: name, Cores: cores})
		}
	}
	slices.SortFunc(c.Others, func(x, y ProcCPU) int { return cmp.Compare(y.Cores, x.Cores) })
	if len(c.Others) > 5 {
		c.Others = c.Others[:5]
	}
	c.Others = append(c.Others, kept...)
	slices.SortFunc(c.Others, func(x, y ProcCPU) int { return cmp.Compare(y.Cores, x.Cores) })
	return c
}
