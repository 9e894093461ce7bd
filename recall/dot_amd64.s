#include "textflag.h"

// func dotAVX2(a, b []int8) int32
// Sign-extends 16 values of each to 16-bit, multiplies them and adds
// neighbouring products into eight 32-bit sums (VPMADDWD), then the
// values left over one by one. len(b) >= len(a).
TEXT ·dotAVX2(SB), NOSPLIT, $0-52
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), DI
	VPXOR Y0, Y0, Y0

loop16:
	CMPQ CX, $16
	JL   sum
	VPMOVSXBW (SI), Y1
	VPMOVSXBW (DI), Y2
	VPMADDWD  Y2, Y1, Y1
	VPADDD    Y1, Y0, Y0
	ADDQ      $16, SI
	ADDQ      $16, DI
	SUBQ      $16, CX
	JMP       loop16

sum:
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4E, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xB1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, AX
	VZEROUPPER

tail:
	TESTQ   CX, CX
	JZ      done
	MOVBLSX (SI), DX
	MOVBLSX (DI), BX
	IMULL   BX, DX
	ADDL    DX, AX
	INCQ    SI
	INCQ    DI
	DECQ    CX
	JMP     tail

done:
	MOVL AX, ret+48(FP)
	RET
