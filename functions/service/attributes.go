package service

import (
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/stores"
)

// Message attributes cross the store seam in the stores' own type, whose
// stored form must not follow changes of the wire type.

func toStored(m map[string]contract.MessageAttributeValue) map[string]stores.Attribute {
	if m == nil {
		return nil
	}
	out := make(map[string]stores.Attribute, len(m))
	for k, v := range m {
		out[k] = stores.Attribute{StringValue: v.StringValue, BinaryValue: v.BinaryValue,
			StringListValues: v.StringListValues, BinaryListValues: v.BinaryListValues, DataType: v.DataType}
	}
	return out
}

func fromStored(a stores.Attribute) contract.MessageAttributeValue {
	return contract.MessageAttributeValue{StringValue: a.StringValue, BinaryValue: a.BinaryValue,
		StringListValues: a.StringListValues, BinaryListValues: a.BinaryListValues, DataType: a.DataType}
}
