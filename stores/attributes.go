package stores

// Attribute is a message attribute as stores keep it. It is the seam's own
// type, not the wire's (contract.MessageAttributeValue), because stores
// write it to disk: its JSON form is stored by the embedded and PostgreSQL
// stores, so the tags below are a stored format and never change (a test
// pins them), whatever the wire types do.
type Attribute struct {
	StringValue      *string  `json:"StringValue,omitempty"`
	BinaryValue      []byte   `json:"BinaryValue,omitempty"`
	StringListValues []string `json:"StringListValues,omitempty"`
	BinaryListValues [][]byte `json:"BinaryListValues,omitempty"`
	DataType         string   `json:"DataType"`
}
