// Package rules holds the SQS rules every store applies, once: pure
// functions and constants over the seam's types (package stores), so that
// each store calls the same rule instead of writing its own copy.
//
// A store that must keep a rule in its own language for speed (pgstore's
// PL/pgSQL and SQL arithmetic) keeps it there and pins it to the function
// here with a test that runs both on the cases in package rulestest.
//
// Policy that the service owns (limits, windows, which error a condition
// becomes) stays in the service: these functions take the numbers as
// arguments, as the seam's params carry them.
package rules
