//go:build race

package systemtest

// raceEnabled tells whether the test binary runs with the race detector;
// the sluice binary under test is built the same way unless
// SLUICE_SYSTEMTEST_RACE says otherwise.
const raceEnabled = true
