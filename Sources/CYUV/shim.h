#ifndef LVB_CYUV_SHIM_H
#define LVB_CYUV_SHIM_H
#include <libyuv.h>
#endif
