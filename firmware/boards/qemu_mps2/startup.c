/* Cortex-M3/M4/M7 reset and vector table for QEMU's mps2 machines (an385/an386/an500). */
#include <stdint.h>

extern uint32_t _estack, _sidata, _sdata, _edata, _sbss, _ebss;
extern int main(void);
extern void __libc_init_array(void);
void SysTick_Handler(void);

#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)

/* -nostartfiles leaves out crti/crtn; __libc_init_array still calls these. */
void _init(void) {}
void _fini(void) {}

/* C++ static objects register their destructors against this handle (crtbegin defines it). */
void *__dso_handle = 0;

void Reset_Handler(void) {
  const uint32_t *src = &_sidata;
  for (uint32_t *dst = &_sdata; dst < &_edata;) *dst++ = *src++;
  for (uint32_t *dst = &_sbss; dst < &_ebss;) *dst++ = 0;
#if defined(__ARM_FP)
  SCB_CPACR |= 0xFu << 20; /* full access to CP10 and CP11: the FPU */
  __asm__ volatile("dsb\n isb");
#endif
  __libc_init_array(); /* C++ static constructors (TFLM) */
  main();
  for (;;) {
  }
}

static void Fault_Handler(void) {
  for (;;) {
  }
}

__attribute__((section(".isr_vector"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(&_estack), Reset_Handler, Fault_Handler, Fault_Handler,
    Fault_Handler, Fault_Handler, Fault_Handler, 0, 0, 0, 0,
    Fault_Handler, Fault_Handler, 0, Fault_Handler, SysTick_Handler,
};
