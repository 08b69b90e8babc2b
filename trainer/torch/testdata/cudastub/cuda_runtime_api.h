/* Declarations-only stand-in for the CUDA runtime API: just enough for
 * scripts/check-libtorch2.sh to type-check the CUDA paths of csrc/ against
 * libtorch 1.13 and 2.x headers on a machine without a CUDA toolkit. */
#pragma once
#include <cstddef>
typedef enum cudaError { cudaSuccess = 0, cudaErrorNotReady = 600, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2, cudaErrorCudartUnloading = 4, cudaErrorInitializationError = 3, cudaErrorNoDevice = 100, cudaErrorInsufficientDriver = 35 } cudaError_t;
typedef enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4, cudaMemcpyHostToHost = 0 } cudaMemcpyKind;
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
typedef struct CUgraph_st* cudaGraph_t;
typedef struct CUgraphExec_st* cudaGraphExec_t;
typedef enum cudaStreamCaptureStatus { cudaStreamCaptureStatusNone = 0, cudaStreamCaptureStatusActive = 1, cudaStreamCaptureStatusInvalidated = 2 } cudaStreamCaptureStatus;
typedef enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal = 0, cudaStreamCaptureModeThreadLocal = 1, cudaStreamCaptureModeRelaxed = 2 } cudaStreamCaptureMode;
typedef struct cudaIpcEventHandle_st { char reserved[64]; } cudaIpcEventHandle_t;
struct cudaDeviceProp { char name[256]; int major, minor; size_t totalGlobalMem; };
#define cudaEventDefault 0
#define cudaEventBlockingSync 1
#define cudaEventDisableTiming 2
#define cudaEventInterprocess 4
#define CUDART_VERSION 11070
#define CUDA_VERSION 11070
cudaError_t cudaGetLastError(void);
const char* cudaGetErrorString(cudaError_t);
cudaError_t cudaStreamQuery(cudaStream_t);
cudaError_t cudaStreamSynchronize(cudaStream_t);
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t*, unsigned int);
cudaError_t cudaEventDestroy(cudaEvent_t);
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t);
cudaError_t cudaEventQuery(cudaEvent_t);
cudaError_t cudaEventSynchronize(cudaEvent_t);
cudaError_t cudaEventElapsedTime(float*, cudaEvent_t, cudaEvent_t);
cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t*, cudaEvent_t);
cudaError_t cudaIpcOpenEventHandle(cudaEvent_t*, cudaIpcEventHandle_t);
cudaError_t cudaMemcpyAsync(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t);
cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus*);
cudaError_t cudaGetDevice(int*);
cudaError_t cudaSetDevice(int);
cudaError_t cudaGetDeviceCount(int*);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaStreamGetPriority(cudaStream_t, int*);
cudaError_t cudaDeviceGetStreamPriorityRange(int*, int*);
cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode*);
typedef int cublasStatus_t; typedef struct cublasContext* cublasHandle_t;
typedef int cusparseStatus_t; typedef struct cusparseContext* cusparseHandle_t;
typedef int cusolverStatus_t; typedef struct cusolverDnContext* cusolverDnHandle_t;
typedef struct cublasLtContext* cublasLtHandle_t;
#define CUBLAS_STATUS_SUCCESS 0
#define CUSPARSE_STATUS_SUCCESS 0
#define CUSOLVER_STATUS_SUCCESS 0
