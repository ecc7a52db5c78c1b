package contract

import (
	"encoding/json"
	"fmt"
)

// The SQS policy quotas (Amazon SQS Developer Guide, "Amazon SQS policy
// quotas"), besides its size (MaxPolicyLength).
const (
	MaxPolicyStatements     = 20
	MaxPolicyActionsPerStmt = 7
	MaxPolicyPrincipals     = 50
	MaxPolicyConditions     = 10
)

// CheckPolicyQuotas refuses, with OverLimit, a queue policy (valid JSON)
// past SQS's quotas: a Policy set as an attribute, or the one AddPermission
// writes. AWS's wording is known for the actions ("10 actions were found in
// a statement from the submitted policy, max allowed is 7"); the others are
// written the same way.
func CheckPolicyQuotas(raw string) *Error {
	var doc struct {
		Statement json.RawMessage
	}
	if json.Unmarshal([]byte(raw), &doc) != nil {
		return nil // not an object: the JSON check answers for it
	}
	var stmts []json.RawMessage
	if json.Unmarshal(doc.Statement, &stmts) != nil {
		stmts = []json.RawMessage{doc.Statement} // a single statement object
	}
	if len(doc.Statement) == 0 {
		stmts = nil
	}
	if len(stmts) > MaxPolicyStatements {
		return ErrOverLimit(fmt.Sprintf("%d statements were found in the submitted policy, max allowed is %d", len(stmts), MaxPolicyStatements))
	}
	principals, conditions := 0, 0
	for _, raw := range stmts {
		var st struct {
			Action    json.RawMessage
			Principal json.RawMessage
			Condition map[string]map[string]json.RawMessage
		}
		if json.Unmarshal(raw, &st) != nil {
			continue
		}
		if n := countValues(st.Action); n > MaxPolicyActionsPerStmt {
			return ErrOverLimit(fmt.Sprintf("%d actions were found in a statement from the submitted policy, max allowed is %d", n, MaxPolicyActionsPerStmt))
		}
		var byKind map[string]json.RawMessage
		if json.Unmarshal(st.Principal, &byKind) == nil {
			for _, v := range byKind {
				principals += countValues(v)
			}
		} else if len(st.Principal) > 0 {
			principals++ // "*"
		}
		for _, keys := range st.Condition {
			conditions += len(keys)
		}
	}
	if principals > MaxPolicyPrincipals {
		return ErrOverLimit(fmt.Sprintf("%d principals were found in the submitted policy, max allowed is %d", principals, MaxPolicyPrincipals))
	}
	if conditions > MaxPolicyConditions {
		return ErrOverLimit(fmt.Sprintf("%d conditions were found in the submitted policy, max allowed is %d", conditions, MaxPolicyConditions))
	}
	return nil
}

// countValues counts a policy element that is one string or a list of them.
func countValues(raw json.RawMessage) int {
	if len(raw) == 0 {
		return 0
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		return len(list)
	}
	return 1
}
