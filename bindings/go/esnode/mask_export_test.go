// Test access to the encoder helper's field prime (package esnode_test builds keys near it).
package esnode

// FieldPrime is the BN254 scalar field's prime r that Mask checks keys against.
var FieldPrime = fieldPrime
