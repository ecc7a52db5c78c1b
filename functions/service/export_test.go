package service

import "context"

// CallerOf tells tests whom a context's requests act for.
func CallerOf(s *Service, ctx context.Context) Caller { return s.caller(ctx) }

// UntilNextChange is a long poll's sleep toward a known visibility change.
var UntilNextChange = untilNextChange
