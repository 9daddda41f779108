package tuple

// Type codes that start each encoded element. The values are fixed by
// FoundationDB's design/tuple.md; codes not listed here are either
// deprecated or reserved and are rejected by the decoder.
const (
	codeNil          = 0x00
	codeBytes        = 0x01
	codeString       = 0x02
	codeNested       = 0x05
	codeNegBigInt    = 0x0b // followed by length^0xff, then one's complement
	codeIntZero      = 0x14 // 0x0c..0x13 negative, 0x15..0x1c positive by byte count
	codePosBigInt    = 0x1d // followed by length, then big-endian magnitude
	codeFloat32      = 0x20
	codeFloat64      = 0x21
	codeFalse        = 0x26
	codeTrue         = 0x27
	codeUUID         = 0x30
	codeVersionstamp = 0x33

	// escapeByte follows a 0x00 that is data rather than a terminator; it
	// can never be a type code, which is what keeps escaping order-preserving.
	escapeByte = 0xff
)

// Integers up to this many bytes of magnitude use the compact codes
// 0x0c..0x1c; longer ones (up to 255 bytes) use the length-prefixed codes.
const maxCompactIntLen = 8
