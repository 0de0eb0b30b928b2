/*
 * bcryptprimitives.dll stand-in for Wine 8, which ships no such DLL.
 *
 * Rust's standard library (windows targets, Rust >= 1.78) imports ProcessPrng from
 * bcryptprimitives.dll to seed HashMap keys; without it every Rust program fails to load under
 * Wine 8 (exit status 53, no output). This DLL exports only ProcessPrng, implemented over
 * RtlGenRandom (advapi32!SystemFunction036), which Wine does provide. Test use only: it is
 * copied into a throwaway Wine prefix by .ci/windows.sh and never shipped.
 */
#include <windows.h>

/* advapi32's RtlGenRandom, exported under its ordinal-era name. */
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

/* Same contract as the real export: fill cbData bytes, always return TRUE. */
BOOL WINAPI ProcessPrng(PBYTE pbData, SIZE_T cbData)
{
    while (cbData > 0) {
        ULONG chunk = cbData > 0x40000000 ? 0x40000000 : (ULONG)cbData;
        if (!SystemFunction036(pbData, chunk)) {
            /* The real ProcessPrng never fails; a failing RNG must not look like success. */
            ExitProcess(0xC0000001u);
        }
        pbData += chunk;
        cbData -= chunk;
    }
    return TRUE;
}
