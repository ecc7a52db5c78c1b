package registry

// Known is known, for the test that keeps it equal to what the stores
// register.
var Known = known
