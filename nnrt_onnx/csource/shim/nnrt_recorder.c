/*
 * A recording implementation of the NNRt C API (a test shim, not a runtime): every one of the 75 functions records
 * its call and arguments -- descriptions, data bytes, index arrays, quantization parameters -- to a trace file, and
 * keeps just enough state to answer the calls an app makes (tensor descriptions, the model's inputs and outputs,
 * tensors with their buffers). nnrt_onnx replays the trace into a Model through its Python API
 * (nnrt_onnx/csource/trace.py, which also documents the format); that replay, not this file, validates the calls.
 *
 * Environment:
 *   NNRT_TRACE          the trace file (default: nnrt_trace.bin in the current directory)
 *   NNRT_SHIM_OUTPUTS   a file of output values that OH_NNExecutor_RunSync / _Run copy into the output tensors
 *                       (per output: u32 rank, i32 dims[rank], u64 byte count, the bytes; little-endian);
 *                       without it the outputs are zeros, dynamic dims set to 1.
 *
 * Plain C99 and libc: it builds with the generated code for the host and for aarch64-linux-musl.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neural_network_runtime/neural_network_runtime.h"

#define MAX_RANK 10
#define SHIM_DEVICE_ID ((size_t)1)

/* ---------------------------------------------------------------------------------------------------------------- */
/* the trace: "NNRTTRC1", then records: u16 name length, name, u16 argument count, arguments (u8 kind, u64 length,
 * bytes), i64 result.  Every integer little-endian.  Argument kinds: q an int64, n NULL, b bytes, s a string,
 * i int32s, U uint32s, d doubles. */

static FILE *trace_file;
static unsigned long long next_handle_id = 1;

static void put_bytes(const void *data, size_t n) {
    if (trace_file != NULL && n > 0 && fwrite(data, 1, n, trace_file) != n) {
        fprintf(stderr, "nnrt recorder: cannot write the trace\n");
        exit(70);
    }
}

static void put_uint(unsigned long long value, int width) {
    unsigned char bytes[8];
    int i;
    for (i = 0; i < width; ++i) {
        bytes[i] = (unsigned char)(value >> (8 * i));
    }
    put_bytes(bytes, (size_t)width);
}

static void close_trace(void) {
    if (trace_file != NULL) {
        fclose(trace_file);
        trace_file = NULL;
    }
}

static void begin(const char *function, unsigned arguments) {
    if (trace_file == NULL) {
        const char *path = getenv("NNRT_TRACE");
        trace_file = fopen(path != NULL && *path ? path : "nnrt_trace.bin", "wb");
        if (trace_file == NULL) {
            fprintf(stderr, "nnrt recorder: cannot open the trace file %s\n", path != NULL ? path : "nnrt_trace.bin");
            exit(70);
        }
        put_bytes("NNRTTRC1", 8);
        atexit(close_trace);
    }
    put_uint(strlen(function), 2);
    put_bytes(function, strlen(function));
    put_uint(arguments, 2);
}

static void argument(char kind, const void *data, size_t length) {
    put_bytes(&kind, 1);
    put_uint(length, 8);
    put_bytes(data, length);
}

static void arg_int(long long value) {
    unsigned char bytes[8];
    int i;
    for (i = 0; i < 8; ++i) {
        bytes[i] = (unsigned char)((unsigned long long)value >> (8 * i));
    }
    argument('q', bytes, 8);
}

static void arg_null(void) { argument('n', NULL, 0); }

static void arg_bytes(const void *data, size_t length) {
    if (data == NULL) {
        arg_null();
    } else {
        argument('b', data, length);
    }
}

static void arg_string(const char *text) {
    if (text == NULL) {
        arg_null();
    } else {
        argument('s', text, strlen(text));
    }
}

/* an array of count little-endian elements of size bytes each (the host is little-endian: both targets are) */
static void arg_array(char kind, const void *data, size_t count, size_t size) {
    if (data == NULL) {
        arg_null();
    } else {
        argument(kind, data, count * size);
    }
}

static void end(long long result) {
    put_uint((unsigned long long)result, 8);
}

static OH_NN_ReturnCode end_code(OH_NN_ReturnCode code) {
    end(code);
    return code;
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* the objects behind the handles */

struct NN_TensorDesc {
    unsigned long long id;
    char *name;
    OH_NN_DataType data_type;
    OH_NN_Format format;
    size_t rank;
    int has_shape;
    int32_t shape[MAX_RANK];
};

struct NN_QuantParam {
    unsigned long long id;
};

typedef struct {
    OH_NN_DataType data_type;
    OH_NN_Format format;
    size_t rank;
    int32_t shape[MAX_RANK];
    char *name;
} ModelTensor;

struct OH_NNModel {
    unsigned long long id;
    ModelTensor *tensors;
    size_t tensor_count, tensor_capacity;
    uint32_t *inputs, *outputs;
    size_t input_count, output_count;
};

struct OH_NNCompilation {
    unsigned long long id;
    const OH_NNModel *model;
};

struct OH_NNExecutor {
    unsigned long long id;
    const OH_NNModel *model;
    NN_OnRunDone on_run_done;
    NN_OnServiceDied on_service_died;
    /* the API-9 calls: inputs and outputs set one by one, then Run */
    void **output_buffers;
    size_t *output_lengths;
    int32_t (*output_shapes)[MAX_RANK];
    uint32_t *output_ranks;
};

struct NN_Tensor {
    unsigned long long id;
    NN_TensorDesc desc;
    void *data;
    size_t size;
};

static void *allocate(size_t size) {
    void *memory = calloc(1, size > 0 ? size : 1);
    if (memory == NULL) {
        fprintf(stderr, "nnrt recorder: out of memory\n");
        exit(71);
    }
    return memory;
}

static char *copy_string(const char *text) {
    char *copy = (char *)allocate(strlen(text) + 1);
    strcpy(copy, text);
    return copy;
}

static size_t element_size(OH_NN_DataType data_type) {
    switch (data_type) {
    case OH_NN_BOOL: case OH_NN_INT8: case OH_NN_UINT8: return 1;
    case OH_NN_INT16: case OH_NN_UINT16: case OH_NN_FLOAT16: return 2;
    case OH_NN_INT32: case OH_NN_UINT32: case OH_NN_FLOAT32: return 4;
    case OH_NN_INT64: case OH_NN_UINT64: case OH_NN_FLOAT64: return 8;
    default: return 0;
    }
}

static size_t element_count(const int32_t *shape, size_t rank, int *dynamic) {
    size_t count = 1, i;
    *dynamic = 0;
    for (i = 0; i < rank; ++i) {
        if (shape[i] < 0) {
            *dynamic = 1;
        } else {
            count *= (size_t)shape[i];
        }
    }
    return count;
}

static void arg_handle(const void *handle, unsigned long long id) {
    if (handle == NULL) {
        arg_null();
    } else {
        arg_int((long long)id);
    }
}

#define ID(handle) ((handle) != NULL ? (handle)->id : 0ULL)

/* ---------------------------------------------------------------------------------------------------------------- */
/* neural_network_runtime.h: quantization parameters */

NN_QuantParam *OH_NNQuantParam_Create(void) {
    NN_QuantParam *quant = (NN_QuantParam *)allocate(sizeof *quant);
    quant->id = next_handle_id++;
    begin("OH_NNQuantParam_Create", 0);
    end((long long)quant->id);
    return quant;
}

static OH_NN_ReturnCode quant_vector(const char *function, NN_QuantParam *quant, char kind, const void *values,
                                     size_t count, size_t size) {
    begin(function, 3);
    arg_handle(quant, ID(quant));
    arg_array(kind, values, count, size);
    arg_int((long long)count);
    if (quant == NULL || values == NULL || count == 0) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNQuantParam_SetScales(NN_QuantParam *quantParams, const double *scales, size_t quantCount) {
    return quant_vector("OH_NNQuantParam_SetScales", quantParams, 'd', scales, quantCount, sizeof(double));
}

OH_NN_ReturnCode OH_NNQuantParam_SetZeroPoints(NN_QuantParam *quantParams, const int32_t *zeroPoints,
                                               size_t quantCount) {
    return quant_vector("OH_NNQuantParam_SetZeroPoints", quantParams, 'i', zeroPoints, quantCount, sizeof(int32_t));
}

OH_NN_ReturnCode OH_NNQuantParam_SetNumBits(NN_QuantParam *quantParams, const uint32_t *numBits, size_t quantCount) {
    return quant_vector("OH_NNQuantParam_SetNumBits", quantParams, 'U', numBits, quantCount, sizeof(uint32_t));
}

OH_NN_ReturnCode OH_NNQuantParam_Destroy(NN_QuantParam **quantParams) {
    begin("OH_NNQuantParam_Destroy", 1);
    if (quantParams == NULL || *quantParams == NULL) {
        arg_null();
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    arg_handle(*quantParams, (*quantParams)->id);
    free(*quantParams);
    *quantParams = NULL;
    return end_code(OH_NN_SUCCESS);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* neural_network_runtime.h: model building */

OH_NNModel *OH_NNModel_Construct(void) {
    OH_NNModel *model = (OH_NNModel *)allocate(sizeof *model);
    model->id = next_handle_id++;
    begin("OH_NNModel_Construct", 0);
    end((long long)model->id);
    return model;
}

static void keep_tensor(OH_NNModel *model, OH_NN_DataType data_type, OH_NN_Format format, const int32_t *shape,
                        size_t rank, const char *name) {
    ModelTensor *tensor;
    if (model->tensor_count == model->tensor_capacity) {
        size_t capacity = model->tensor_capacity ? 2 * model->tensor_capacity : 64;
        ModelTensor *grown = (ModelTensor *)realloc(model->tensors, capacity * sizeof *grown);
        if (grown == NULL) {
            fprintf(stderr, "nnrt recorder: out of memory\n");
            exit(71);
        }
        model->tensors = grown;
        model->tensor_capacity = capacity;
    }
    tensor = &model->tensors[model->tensor_count++];
    memset(tensor, 0, sizeof *tensor);
    tensor->data_type = data_type;
    tensor->format = format;
    tensor->rank = rank > MAX_RANK ? MAX_RANK : rank;
    if (tensor->rank > 0) {
        memcpy(tensor->shape, shape, tensor->rank * sizeof(int32_t));
    }
    tensor->name = copy_string(name);
}

OH_NN_ReturnCode OH_NNModel_AddTensorToModel(OH_NNModel *model, const NN_TensorDesc *tensorDesc) {
    begin("OH_NNModel_AddTensorToModel", 2);
    arg_handle(model, ID(model));
    arg_handle(tensorDesc, ID(tensorDesc));
    if (model == NULL || tensorDesc == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    keep_tensor(model, tensorDesc->data_type, tensorDesc->format, tensorDesc->shape,
                tensorDesc->has_shape ? tensorDesc->rank : 0, tensorDesc->name != NULL ? tensorDesc->name : "");
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNModel_SetTensorData(OH_NNModel *model, uint32_t index, const void *dataBuffer, size_t length) {
    begin("OH_NNModel_SetTensorData", 4);
    arg_handle(model, ID(model));
    arg_int(index);
    arg_bytes(dataBuffer, length);
    arg_int((long long)length);
    if (model == NULL || dataBuffer == NULL || length == 0) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNModel_SetTensorQuantParams(OH_NNModel *model, uint32_t index, NN_QuantParam *quantParam) {
    begin("OH_NNModel_SetTensorQuantParams", 3);
    arg_handle(model, ID(model));
    arg_int(index);
    arg_handle(quantParam, ID(quantParam));
    if (model == NULL || quantParam == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNModel_SetTensorType(OH_NNModel *model, uint32_t index, OH_NN_TensorType tensorType) {
    begin("OH_NNModel_SetTensorType", 3);
    arg_handle(model, ID(model));
    arg_int(index);
    arg_int(tensorType);
    return end_code(model == NULL ? OH_NN_INVALID_PARAMETER : OH_NN_SUCCESS);
}

static void arg_indices(const OH_NN_UInt32Array *indices) {
    if (indices == NULL || (indices->data == NULL && indices->size > 0)) {
        arg_null(); /* refused by the replay, as by the runtime */
    } else if (indices->data == NULL) {
        argument('U', NULL, 0); /* {NULL, 0}: no indices (e.g. an operation without parameters) */
    } else {
        argument('U', indices->data, indices->size * sizeof(uint32_t));
    }
}

OH_NN_ReturnCode OH_NNModel_AddOperation(OH_NNModel *model, OH_NN_OperationType op,
                                         const OH_NN_UInt32Array *paramIndices,
                                         const OH_NN_UInt32Array *inputIndices,
                                         const OH_NN_UInt32Array *outputIndices) {
    begin("OH_NNModel_AddOperation", 5);
    arg_handle(model, ID(model));
    arg_int(op);
    arg_indices(paramIndices);
    arg_indices(inputIndices);
    arg_indices(outputIndices);
    if (model == NULL || paramIndices == NULL || inputIndices == NULL || outputIndices == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    return end_code(OH_NN_SUCCESS);
}

static uint32_t *copy_indices(const OH_NN_UInt32Array *indices, size_t *count) {
    uint32_t *copy = (uint32_t *)allocate(indices->size * sizeof(uint32_t));
    if (indices->size > 0) {
        memcpy(copy, indices->data, indices->size * sizeof(uint32_t));
    }
    *count = indices->size;
    return copy;
}

OH_NN_ReturnCode OH_NNModel_SpecifyInputsAndOutputs(OH_NNModel *model, const OH_NN_UInt32Array *inputIndices,
                                                    const OH_NN_UInt32Array *outputIndices) {
    begin("OH_NNModel_SpecifyInputsAndOutputs", 3);
    arg_handle(model, ID(model));
    arg_indices(inputIndices);
    arg_indices(outputIndices);
    if (model == NULL || inputIndices == NULL || outputIndices == NULL || inputIndices->data == NULL ||
        outputIndices->data == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    free(model->inputs);
    free(model->outputs);
    model->inputs = copy_indices(inputIndices, &model->input_count);
    model->outputs = copy_indices(outputIndices, &model->output_count);
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNModel_Finish(OH_NNModel *model) {
    begin("OH_NNModel_Finish", 1);
    arg_handle(model, ID(model));
    end(model == NULL ? OH_NN_INVALID_PARAMETER : OH_NN_SUCCESS);
    if (trace_file != NULL) {
        fflush(trace_file);
    }
    return model == NULL ? OH_NN_INVALID_PARAMETER : OH_NN_SUCCESS;
}

void OH_NNModel_Destroy(OH_NNModel **model) {
    size_t i;
    begin("OH_NNModel_Destroy", 1);
    if (model == NULL || *model == NULL) {
        arg_null();
        end(0);
        return;
    }
    arg_handle(*model, (*model)->id);
    end(0);
    for (i = 0; i < (*model)->tensor_count; ++i) {
        free((*model)->tensors[i].name);
    }
    free((*model)->tensors);
    free((*model)->inputs);
    free((*model)->outputs);
    free(*model);
    *model = NULL;
}

OH_NN_ReturnCode OH_NNModel_GetAvailableOperations(OH_NNModel *model, size_t deviceID, const bool **isSupported,
                                                   uint32_t *opCount) {
    static bool supported[1] = {true};
    begin("OH_NNModel_GetAvailableOperations", 2);
    arg_handle(model, ID(model));
    arg_int((long long)deviceID);
    if (model == NULL || isSupported == NULL || opCount == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    *isSupported = supported; /* the recorder knows no device's limits: it answers for one operation */
    *opCount = 1;
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNModel_AddTensor(OH_NNModel *model, const OH_NN_Tensor *tensor) {
    begin("OH_NNModel_AddTensor", 8);
    arg_handle(model, ID(model));
    if (tensor == NULL) {
        int i;
        for (i = 0; i < 7; ++i) {
            arg_null();
        }
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    arg_int(tensor->dataType);
    arg_array('i', tensor->dimensions, tensor->dimensionCount, sizeof(int32_t));
    arg_int(tensor->type);
    if (tensor->quantParam == NULL) {
        arg_null();
        arg_null();
        arg_null();
        arg_null();
    } else {
        arg_int(tensor->quantParam->quantCount);
        arg_array('U', tensor->quantParam->numBits, tensor->quantParam->quantCount, sizeof(uint32_t));
        arg_array('d', tensor->quantParam->scale, tensor->quantParam->quantCount, sizeof(double));
        arg_array('i', tensor->quantParam->zeroPoint, tensor->quantParam->quantCount, sizeof(int32_t));
    }
    if (model == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    if (tensor->dimensionCount > 0 && tensor->dimensions == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    keep_tensor(model, tensor->dataType, OH_NN_FORMAT_NONE, tensor->dimensions, tensor->dimensionCount, "");
    return end_code(OH_NN_SUCCESS);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* output values for the runs (NNRT_SHIM_OUTPUTS) */

static int next_output(FILE *source, NN_TensorDesc *desc, void *buffer, size_t capacity) {
    unsigned char word[8];
    uint32_t rank, i;
    unsigned long long length = 0;
    if (fread(word, 1, 4, source) != 4) {
        return -1;
    }
    rank = (uint32_t)word[0] | (uint32_t)word[1] << 8 | (uint32_t)word[2] << 16 | (uint32_t)word[3] << 24;
    if (rank > MAX_RANK) {
        return -1;
    }
    for (i = 0; i < rank; ++i) {
        if (fread(word, 1, 4, source) != 4) {
            return -1;
        }
        desc->shape[i] = (int32_t)((uint32_t)word[0] | (uint32_t)word[1] << 8 | (uint32_t)word[2] << 16 |
                                   (uint32_t)word[3] << 24);
    }
    desc->rank = rank;
    desc->has_shape = 1;
    if (fread(word, 1, 8, source) != 8) {
        return -1;
    }
    for (i = 0; i < 8; ++i) {
        length |= (unsigned long long)word[i] << (8 * i);
    }
    if (length > capacity) {
        return -2;
    }
    if (length > 0 && fread(buffer, 1, (size_t)length, source) != (size_t)length) {
        return -1;
    }
    return 0;
}

static FILE *open_outputs(void) {
    const char *path = getenv("NNRT_SHIM_OUTPUTS");
    if (path == NULL || *path == '\0') {
        return NULL;
    }
    return fopen(path, "rb");
}

static void zero_output(NN_TensorDesc *desc, void *buffer, size_t capacity) {
    size_t i;
    for (i = 0; i < desc->rank; ++i) {
        if (desc->shape[i] < 0) {
            desc->shape[i] = 1;
        }
    }
    memset(buffer, 0, capacity);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* neural_network_runtime.h: the API-9 executor calls (deprecated since 11) */

static OH_NN_ReturnCode legacy_output_slot(OH_NNExecutor *executor, uint32_t index) {
    if (executor == NULL || index >= executor->model->output_count) {
        return OH_NN_INVALID_PARAMETER;
    }
    if (executor->output_buffers == NULL) {
        size_t n = executor->model->output_count;
        executor->output_buffers = (void **)allocate(n * sizeof(void *));
        executor->output_lengths = (size_t *)allocate(n * sizeof(size_t));
        executor->output_shapes = (int32_t(*)[MAX_RANK])allocate(n * sizeof *executor->output_shapes);
        executor->output_ranks = (uint32_t *)allocate(n * sizeof(uint32_t));
    }
    return OH_NN_SUCCESS;
}

OH_NN_ReturnCode OH_NNExecutor_SetInput(OH_NNExecutor *executor, uint32_t inputIndex, const OH_NN_Tensor *tensor,
                                        const void *dataBuffer, size_t length) {
    begin("OH_NNExecutor_SetInput", 6);
    arg_handle(executor, ID(executor));
    arg_int(inputIndex);
    arg_int(tensor != NULL ? tensor->dataType : 0);
    if (tensor != NULL) {
        arg_array('i', tensor->dimensions, tensor->dimensionCount, sizeof(int32_t));
    } else {
        arg_null();
    }
    arg_bytes(dataBuffer, length);
    arg_int((long long)length);
    if (executor == NULL || tensor == NULL || dataBuffer == NULL || length == 0 ||
        inputIndex >= executor->model->input_count) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNExecutor_SetOutput(OH_NNExecutor *executor, uint32_t outputIndex, void *dataBuffer,
                                         size_t length) {
    begin("OH_NNExecutor_SetOutput", 3);
    arg_handle(executor, ID(executor));
    arg_int(outputIndex);
    arg_int((long long)length);
    if (dataBuffer == NULL || length == 0 || legacy_output_slot(executor, outputIndex) != OH_NN_SUCCESS) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    executor->output_buffers[outputIndex] = dataBuffer;
    executor->output_lengths[outputIndex] = length;
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNExecutor_Run(OH_NNExecutor *executor) {
    FILE *values;
    size_t i;
    OH_NN_ReturnCode code = OH_NN_SUCCESS;
    begin("OH_NNExecutor_Run", 1);
    arg_handle(executor, ID(executor));
    if (executor == NULL || executor->output_buffers == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    values = open_outputs();
    for (i = 0; i < executor->model->output_count; ++i) {
        const ModelTensor *model_tensor = &executor->model->tensors[executor->model->outputs[i]];
        NN_TensorDesc desc;
        memset(&desc, 0, sizeof desc);
        desc.rank = model_tensor->rank;
        memcpy(desc.shape, model_tensor->shape, sizeof desc.shape);
        if (executor->output_buffers[i] == NULL) {
            code = OH_NN_INVALID_PARAMETER;
            break;
        }
        if (values != NULL) {
            if (next_output(values, &desc, executor->output_buffers[i], executor->output_lengths[i]) != 0) {
                code = OH_NN_INVALID_PARAMETER;
                break;
            }
        } else {
            zero_output(&desc, executor->output_buffers[i], executor->output_lengths[i]);
        }
        executor->output_ranks[i] = (uint32_t)desc.rank;
        memcpy(executor->output_shapes[i], desc.shape, sizeof desc.shape);
    }
    if (values != NULL) {
        fclose(values);
    }
    return end_code(code);
}

OH_NN_Memory *OH_NNExecutor_AllocateInputMemory(OH_NNExecutor *executor, uint32_t inputIndex, size_t length) {
    OH_NN_Memory *memory;
    begin("OH_NNExecutor_AllocateInputMemory", 3);
    arg_handle(executor, ID(executor));
    arg_int(inputIndex);
    arg_int((long long)length);
    if (executor == NULL || length == 0) {
        end(0);
        return NULL;
    }
    memory = (OH_NN_Memory *)allocate(sizeof *memory);
    *(void **)&memory->data = allocate(length);
    *(size_t *)&memory->length = length;
    end(1);
    return memory;
}

OH_NN_Memory *OH_NNExecutor_AllocateOutputMemory(OH_NNExecutor *executor, uint32_t outputIndex, size_t length) {
    OH_NN_Memory *memory;
    begin("OH_NNExecutor_AllocateOutputMemory", 3);
    arg_handle(executor, ID(executor));
    arg_int(outputIndex);
    arg_int((long long)length);
    if (executor == NULL || length == 0) {
        end(0);
        return NULL;
    }
    memory = (OH_NN_Memory *)allocate(sizeof *memory);
    *(void **)&memory->data = allocate(length);
    *(size_t *)&memory->length = length;
    end(1);
    return memory;
}

static void destroy_memory(const char *function, OH_NNExecutor *executor, uint32_t index, OH_NN_Memory **memory) {
    begin(function, 2);
    arg_handle(executor, ID(executor));
    arg_int(index);
    end(0);
    if (memory != NULL && *memory != NULL) {
        free((*memory)->data);
        free(*memory);
        *memory = NULL;
    }
}

void OH_NNExecutor_DestroyInputMemory(OH_NNExecutor *executor, uint32_t inputIndex, OH_NN_Memory **memory) {
    destroy_memory("OH_NNExecutor_DestroyInputMemory", executor, inputIndex, memory);
}

void OH_NNExecutor_DestroyOutputMemory(OH_NNExecutor *executor, uint32_t outputIndex, OH_NN_Memory **memory) {
    destroy_memory("OH_NNExecutor_DestroyOutputMemory", executor, outputIndex, memory);
}

OH_NN_ReturnCode OH_NNExecutor_SetInputWithMemory(OH_NNExecutor *executor, uint32_t inputIndex,
                                                  const OH_NN_Tensor *tensor, const OH_NN_Memory *memory) {
    begin("OH_NNExecutor_SetInputWithMemory", 6);
    arg_handle(executor, ID(executor));
    arg_int(inputIndex);
    arg_int(tensor != NULL ? tensor->dataType : 0);
    if (tensor != NULL) {
        arg_array('i', tensor->dimensions, tensor->dimensionCount, sizeof(int32_t));
    } else {
        arg_null();
    }
    if (memory != NULL) {
        arg_bytes(memory->data, memory->length);
        arg_int((long long)memory->length);
    } else {
        arg_null();
        arg_null();
    }
    if (executor == NULL || tensor == NULL || memory == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNExecutor_SetOutputWithMemory(OH_NNExecutor *executor, uint32_t outputIndex,
                                                   const OH_NN_Memory *memory) {
    begin("OH_NNExecutor_SetOutputWithMemory", 3);
    arg_handle(executor, ID(executor));
    arg_int(outputIndex);
    arg_int(memory != NULL ? (long long)memory->length : 0);
    if (memory == NULL || legacy_output_slot(executor, outputIndex) != OH_NN_SUCCESS) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    executor->output_buffers[outputIndex] = memory->data;
    executor->output_lengths[outputIndex] = memory->length;
    return end_code(OH_NN_SUCCESS);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* neural_network_core.h: compilation */

static OH_NNCompilation *new_compilation(const OH_NNModel *model) {
    OH_NNCompilation *compilation = (OH_NNCompilation *)allocate(sizeof *compilation);
    compilation->id = next_handle_id++;
    compilation->model = model;
    return compilation;
}

OH_NNCompilation *OH_NNCompilation_Construct(const OH_NNModel *model) {
    OH_NNCompilation *compilation = model != NULL ? new_compilation(model) : NULL;
    begin("OH_NNCompilation_Construct", 1);
    arg_handle(model, ID(model));
    end((long long)ID(compilation));
    return compilation;
}

OH_NNCompilation *OH_NNCompilation_ConstructWithOfflineModelFile(const char *modelPath) {
    begin("OH_NNCompilation_ConstructWithOfflineModelFile", 1);
    arg_string(modelPath);
    end(0);
    return NULL; /* an offline model is a vendor's binary: nothing to record it into */
}

OH_NNCompilation *OH_NNCompilation_ConstructWithOfflineModelBuffer(const void *modelBuffer, size_t modelSize) {
    begin("OH_NNCompilation_ConstructWithOfflineModelBuffer", 2);
    arg_bytes(modelBuffer, modelSize);
    arg_int((long long)modelSize);
    end(0);
    return NULL;
}

OH_NNCompilation *OH_NNCompilation_ConstructForCache(void) {
    begin("OH_NNCompilation_ConstructForCache", 0);
    end(0);
    return NULL;
}

OH_NN_ReturnCode OH_NNCompilation_ExportCacheToBuffer(OH_NNCompilation *compilation, const void *buffer, size_t length,
                                                      size_t *modelSize) {
    begin("OH_NNCompilation_ExportCacheToBuffer", 2);
    arg_handle(compilation, ID(compilation));
    arg_int((long long)length);
    (void)buffer;
    (void)modelSize;
    return end_code(OH_NN_UNSUPPORTED);
}

OH_NN_ReturnCode OH_NNCompilation_ImportCacheFromBuffer(OH_NNCompilation *compilation, const void *buffer,
                                                        size_t modelSize) {
    begin("OH_NNCompilation_ImportCacheFromBuffer", 2);
    arg_handle(compilation, ID(compilation));
    arg_bytes(buffer, modelSize);
    return end_code(OH_NN_UNSUPPORTED);
}

OH_NN_ReturnCode OH_NNCompilation_AddExtensionConfig(OH_NNCompilation *compilation, const char *configName,
                                                     const void *configValue, const size_t configValueSize) {
    begin("OH_NNCompilation_AddExtensionConfig", 3);
    arg_handle(compilation, ID(compilation));
    arg_string(configName);
    arg_bytes(configValue, configValueSize);
    return end_code(compilation == NULL || configName == NULL ? OH_NN_INVALID_PARAMETER : OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNCompilation_SetDevice(OH_NNCompilation *compilation, size_t deviceID) {
    begin("OH_NNCompilation_SetDevice", 2);
    arg_handle(compilation, ID(compilation));
    arg_int((long long)deviceID);
    return end_code(compilation == NULL ? OH_NN_INVALID_PARAMETER : OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNCompilation_SetCache(OH_NNCompilation *compilation, const char *cachePath, uint32_t version) {
    begin("OH_NNCompilation_SetCache", 3);
    arg_handle(compilation, ID(compilation));
    arg_string(cachePath);
    arg_int(version);
    return end_code(compilation == NULL || cachePath == NULL ? OH_NN_INVALID_PARAMETER : OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNCompilation_SetPerformanceMode(OH_NNCompilation *compilation,
                                                     OH_NN_PerformanceMode performanceMode) {
    begin("OH_NNCompilation_SetPerformanceMode", 2);
    arg_handle(compilation, ID(compilation));
    arg_int(performanceMode);
    return end_code(compilation == NULL ? OH_NN_INVALID_PARAMETER : OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNCompilation_SetPriority(OH_NNCompilation *compilation, OH_NN_Priority priority) {
    begin("OH_NNCompilation_SetPriority", 2);
    arg_handle(compilation, ID(compilation));
    arg_int(priority);
    return end_code(compilation == NULL ? OH_NN_INVALID_PARAMETER : OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNCompilation_EnableFloat16(OH_NNCompilation *compilation, bool enableFloat16) {
    begin("OH_NNCompilation_EnableFloat16", 2);
    arg_handle(compilation, ID(compilation));
    arg_int(enableFloat16);
    return end_code(compilation == NULL ? OH_NN_INVALID_PARAMETER : OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNCompilation_Build(OH_NNCompilation *compilation) {
    begin("OH_NNCompilation_Build", 1);
    arg_handle(compilation, ID(compilation));
    return end_code(compilation == NULL ? OH_NN_INVALID_PARAMETER : OH_NN_SUCCESS);
}

void OH_NNCompilation_Destroy(OH_NNCompilation **compilation) {
    begin("OH_NNCompilation_Destroy", 1);
    if (compilation == NULL || *compilation == NULL) {
        arg_null();
        end(0);
        return;
    }
    arg_handle(*compilation, (*compilation)->id);
    end(0);
    free(*compilation);
    *compilation = NULL;
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* neural_network_core.h: tensor descriptions */

static NN_TensorDesc *new_desc(void) {
    NN_TensorDesc *desc = (NN_TensorDesc *)allocate(sizeof *desc);
    desc->id = next_handle_id++;
    desc->data_type = OH_NN_UNKNOWN;
    desc->format = OH_NN_FORMAT_NONE;
    return desc;
}

NN_TensorDesc *OH_NNTensorDesc_Create(void) {
    NN_TensorDesc *desc = new_desc();
    begin("OH_NNTensorDesc_Create", 0);
    end((long long)desc->id);
    return desc;
}

OH_NN_ReturnCode OH_NNTensorDesc_Destroy(NN_TensorDesc **tensorDesc) {
    begin("OH_NNTensorDesc_Destroy", 1);
    if (tensorDesc == NULL || *tensorDesc == NULL) {
        arg_null();
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    arg_handle(*tensorDesc, (*tensorDesc)->id);
    free((*tensorDesc)->name);
    free(*tensorDesc);
    *tensorDesc = NULL;
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNTensorDesc_SetName(NN_TensorDesc *tensorDesc, const char *name) {
    begin("OH_NNTensorDesc_SetName", 2);
    arg_handle(tensorDesc, ID(tensorDesc));
    arg_string(name);
    if (tensorDesc == NULL || name == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    free(tensorDesc->name);
    tensorDesc->name = copy_string(name);
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNTensorDesc_GetName(const NN_TensorDesc *tensorDesc, const char **name) {
    begin("OH_NNTensorDesc_GetName", 1);
    arg_handle(tensorDesc, ID(tensorDesc));
    if (tensorDesc == NULL || name == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    *name = tensorDesc->name != NULL ? tensorDesc->name : "";
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNTensorDesc_SetDataType(NN_TensorDesc *tensorDesc, OH_NN_DataType dataType) {
    begin("OH_NNTensorDesc_SetDataType", 2);
    arg_handle(tensorDesc, ID(tensorDesc));
    arg_int(dataType);
    if (tensorDesc == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    tensorDesc->data_type = dataType;
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNTensorDesc_GetDataType(const NN_TensorDesc *tensorDesc, OH_NN_DataType *dataType) {
    begin("OH_NNTensorDesc_GetDataType", 1);
    arg_handle(tensorDesc, ID(tensorDesc));
    if (tensorDesc == NULL || dataType == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    *dataType = tensorDesc->data_type;
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNTensorDesc_SetShape(NN_TensorDesc *tensorDesc, const int32_t *shape, size_t shapeLength) {
    begin("OH_NNTensorDesc_SetShape", 3);
    arg_handle(tensorDesc, ID(tensorDesc));
    arg_array('i', shape, shapeLength, sizeof(int32_t));
    arg_int((long long)shapeLength);
    if (tensorDesc == NULL || shape == NULL || shapeLength == 0 || shapeLength > MAX_RANK) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    memcpy(tensorDesc->shape, shape, shapeLength * sizeof(int32_t));
    tensorDesc->rank = shapeLength;
    tensorDesc->has_shape = 1;
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNTensorDesc_GetShape(const NN_TensorDesc *tensorDesc, int32_t **shape, size_t *shapeLength) {
    begin("OH_NNTensorDesc_GetShape", 1);
    arg_handle(tensorDesc, ID(tensorDesc));
    if (tensorDesc == NULL || shape == NULL || shapeLength == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    *shape = (int32_t *)tensorDesc->shape;
    *shapeLength = tensorDesc->rank;
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNTensorDesc_SetFormat(NN_TensorDesc *tensorDesc, OH_NN_Format format) {
    begin("OH_NNTensorDesc_SetFormat", 2);
    arg_handle(tensorDesc, ID(tensorDesc));
    arg_int(format);
    if (tensorDesc == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    tensorDesc->format = format;
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNTensorDesc_GetFormat(const NN_TensorDesc *tensorDesc, OH_NN_Format *format) {
    begin("OH_NNTensorDesc_GetFormat", 1);
    arg_handle(tensorDesc, ID(tensorDesc));
    if (tensorDesc == NULL || format == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    *format = tensorDesc->format;
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNTensorDesc_GetElementCount(const NN_TensorDesc *tensorDesc, size_t *elementCount) {
    int dynamic;
    size_t count;
    begin("OH_NNTensorDesc_GetElementCount", 1);
    arg_handle(tensorDesc, ID(tensorDesc));
    if (tensorDesc == NULL || elementCount == NULL || !tensorDesc->has_shape) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    count = element_count(tensorDesc->shape, tensorDesc->rank, &dynamic);
    *elementCount = dynamic ? 0 : count;
    return end_code(dynamic ? OH_NN_DYNAMIC_SHAPE : OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNTensorDesc_GetByteSize(const NN_TensorDesc *tensorDesc, size_t *byteSize) {
    int dynamic;
    size_t count;
    begin("OH_NNTensorDesc_GetByteSize", 1);
    arg_handle(tensorDesc, ID(tensorDesc));
    if (tensorDesc == NULL || byteSize == NULL || !tensorDesc->has_shape || element_size(tensorDesc->data_type) == 0) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    count = element_count(tensorDesc->shape, tensorDesc->rank, &dynamic);
    *byteSize = dynamic ? 0 : count * element_size(tensorDesc->data_type);
    return end_code(OH_NN_SUCCESS);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* neural_network_core.h: tensors */

static NN_Tensor *new_tensor(const NN_TensorDesc *desc, size_t size) {
    NN_Tensor *tensor = (NN_Tensor *)allocate(sizeof *tensor);
    tensor->id = next_handle_id++;
    tensor->desc = *desc;
    tensor->desc.name = copy_string(desc->name != NULL ? desc->name : "");
    tensor->data = allocate(size);
    tensor->size = size;
    return tensor;
}

static size_t desc_bytes(const NN_TensorDesc *desc, int *dynamic) {
    return element_count(desc->shape, desc->rank, dynamic) * element_size(desc->data_type);
}

NN_Tensor *OH_NNTensor_Create(size_t deviceID, NN_TensorDesc *tensorDesc) {
    NN_Tensor *tensor = NULL;
    int dynamic = 0;
    size_t bytes = tensorDesc != NULL ? desc_bytes(tensorDesc, &dynamic) : 0;
    if (tensorDesc != NULL && tensorDesc->has_shape && !dynamic && element_size(tensorDesc->data_type) > 0) {
        tensor = new_tensor(tensorDesc, bytes);
    }
    begin("OH_NNTensor_Create", 2);
    arg_int((long long)deviceID);
    arg_handle(tensorDesc, ID(tensorDesc));
    end((long long)ID(tensor));
    return tensor;
}

NN_Tensor *OH_NNTensor_CreateWithSize(size_t deviceID, NN_TensorDesc *tensorDesc, size_t size) {
    NN_Tensor *tensor = NULL;
    int dynamic = 0;
    size_t bytes = tensorDesc != NULL ? desc_bytes(tensorDesc, &dynamic) : 0;
    if (tensorDesc != NULL && tensorDesc->has_shape && element_size(tensorDesc->data_type) > 0 && size > 0 &&
        size >= (dynamic ? 0 : bytes)) {
        tensor = new_tensor(tensorDesc, size);
    }
    begin("OH_NNTensor_CreateWithSize", 3);
    arg_int((long long)deviceID);
    arg_handle(tensorDesc, ID(tensorDesc));
    arg_int((long long)size);
    end((long long)ID(tensor));
    return tensor;
}

NN_Tensor *OH_NNTensor_CreateWithFd(size_t deviceID, NN_TensorDesc *tensorDesc, int fd, size_t size, size_t offset) {
    begin("OH_NNTensor_CreateWithFd", 5);
    arg_int((long long)deviceID);
    arg_handle(tensorDesc, ID(tensorDesc));
    arg_int(fd);
    arg_int((long long)size);
    arg_int((long long)offset);
    end(0);
    return NULL; /* no shared memory behind a recorder */
}

OH_NN_ReturnCode OH_NNTensor_Destroy(NN_Tensor **tensor) {
    begin("OH_NNTensor_Destroy", 1);
    if (tensor == NULL || *tensor == NULL) {
        arg_null();
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    arg_handle(*tensor, (*tensor)->id);
    free((*tensor)->desc.name);
    free((*tensor)->data);
    free(*tensor);
    *tensor = NULL;
    return end_code(OH_NN_SUCCESS);
}

NN_TensorDesc *OH_NNTensor_GetTensorDesc(const NN_Tensor *tensor) {
    begin("OH_NNTensor_GetTensorDesc", 1);
    arg_handle(tensor, ID(tensor));
    end(tensor != NULL ? (long long)tensor->desc.id : 0);
    return tensor != NULL ? (NN_TensorDesc *)&tensor->desc : NULL;
}

void *OH_NNTensor_GetDataBuffer(const NN_Tensor *tensor) {
    begin("OH_NNTensor_GetDataBuffer", 1);
    arg_handle(tensor, ID(tensor));
    end(tensor != NULL);
    return tensor != NULL ? tensor->data : NULL;
}

OH_NN_ReturnCode OH_NNTensor_GetFd(const NN_Tensor *tensor, int *fd) {
    begin("OH_NNTensor_GetFd", 1);
    arg_handle(tensor, ID(tensor));
    if (tensor == NULL || fd == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    *fd = -1;
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNTensor_GetSize(const NN_Tensor *tensor, size_t *size) {
    begin("OH_NNTensor_GetSize", 1);
    arg_handle(tensor, ID(tensor));
    if (tensor == NULL || size == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    *size = tensor->size;
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNTensor_GetOffset(const NN_Tensor *tensor, size_t *offset) {
    begin("OH_NNTensor_GetOffset", 1);
    arg_handle(tensor, ID(tensor));
    if (tensor == NULL || offset == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    *offset = 0;
    return end_code(OH_NN_SUCCESS);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* neural_network_core.h: execution */

OH_NNExecutor *OH_NNExecutor_Construct(OH_NNCompilation *compilation) {
    OH_NNExecutor *executor = NULL;
    if (compilation != NULL && compilation->model != NULL) {
        executor = (OH_NNExecutor *)allocate(sizeof *executor);
        executor->id = next_handle_id++;
        executor->model = compilation->model;
    }
    begin("OH_NNExecutor_Construct", 1);
    arg_handle(compilation, ID(compilation));
    end((long long)ID(executor));
    return executor;
}

OH_NN_ReturnCode OH_NNExecutor_GetOutputShape(OH_NNExecutor *executor, uint32_t outputIndex, int32_t **shape,
                                              uint32_t *shapeLength) {
    begin("OH_NNExecutor_GetOutputShape", 2);
    arg_handle(executor, ID(executor));
    arg_int(outputIndex);
    if (executor == NULL || shape == NULL || shapeLength == NULL || executor->output_ranks == NULL ||
        outputIndex >= executor->model->output_count) {
        return end_code(executor != NULL && executor->output_ranks == NULL ? OH_NN_OPERATION_FORBIDDEN
                                                                            : OH_NN_INVALID_PARAMETER);
    }
    *shape = executor->output_shapes[outputIndex];
    *shapeLength = executor->output_ranks[outputIndex];
    return end_code(OH_NN_SUCCESS);
}

void OH_NNExecutor_Destroy(OH_NNExecutor **executor) {
    begin("OH_NNExecutor_Destroy", 1);
    if (executor == NULL || *executor == NULL) {
        arg_null();
        end(0);
        return;
    }
    arg_handle(*executor, (*executor)->id);
    end(0);
    free((*executor)->output_buffers);
    free((*executor)->output_lengths);
    free((*executor)->output_shapes);
    free((*executor)->output_ranks);
    free(*executor);
    *executor = NULL;
}

OH_NN_ReturnCode OH_NNExecutor_GetInputCount(const OH_NNExecutor *executor, size_t *inputCount) {
    begin("OH_NNExecutor_GetInputCount", 1);
    arg_handle(executor, ID(executor));
    if (executor == NULL || inputCount == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    *inputCount = executor->model->input_count;
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNExecutor_GetOutputCount(const OH_NNExecutor *executor, size_t *outputCount) {
    begin("OH_NNExecutor_GetOutputCount", 1);
    arg_handle(executor, ID(executor));
    if (executor == NULL || outputCount == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    *outputCount = executor->model->output_count;
    return end_code(OH_NN_SUCCESS);
}

static NN_TensorDesc *model_tensor_desc(const OH_NNModel *model, uint32_t tensor_index) {
    const ModelTensor *tensor = &model->tensors[tensor_index];
    NN_TensorDesc *desc = new_desc();
    desc->name = copy_string(tensor->name);
    desc->data_type = tensor->data_type;
    desc->format = tensor->format;
    desc->rank = tensor->rank;
    desc->has_shape = 1;
    if (tensor->rank > 0) {
        memcpy(desc->shape, tensor->shape, tensor->rank * sizeof(int32_t));
    } else {
        desc->rank = 1; /* a scalar input is a one-element tensor to run with */
        desc->shape[0] = 1;
    }
    return desc;
}

static NN_TensorDesc *io_desc(const char *function, const OH_NNExecutor *executor, size_t index, int output) {
    NN_TensorDesc *desc = NULL;
    if (executor != NULL) {
        const OH_NNModel *model = executor->model;
        size_t count = output ? model->output_count : model->input_count;
        if (index < count) {
            uint32_t tensor_index = output ? model->outputs[index] : model->inputs[index];
            if (tensor_index < model->tensor_count) {
                desc = model_tensor_desc(model, tensor_index);
            }
        }
    }
    begin(function, 2);
    arg_handle(executor, ID(executor));
    arg_int((long long)index);
    end((long long)ID(desc));
    return desc;
}

NN_TensorDesc *OH_NNExecutor_CreateInputTensorDesc(const OH_NNExecutor *executor, size_t index) {
    return io_desc("OH_NNExecutor_CreateInputTensorDesc", executor, index, 0);
}

NN_TensorDesc *OH_NNExecutor_CreateOutputTensorDesc(const OH_NNExecutor *executor, size_t index) {
    return io_desc("OH_NNExecutor_CreateOutputTensorDesc", executor, index, 1);
}

OH_NN_ReturnCode OH_NNExecutor_GetInputDimRange(const OH_NNExecutor *executor, size_t index, size_t **minInputDims,
                                                size_t **maxInputDims, size_t *shapeLength) {
    static size_t low[MAX_RANK], high[MAX_RANK];
    const ModelTensor *tensor;
    size_t i;
    begin("OH_NNExecutor_GetInputDimRange", 2);
    arg_handle(executor, ID(executor));
    arg_int((long long)index);
    if (executor == NULL || minInputDims == NULL || maxInputDims == NULL || shapeLength == NULL ||
        index >= executor->model->input_count) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    tensor = &executor->model->tensors[executor->model->inputs[index]];
    for (i = 0; i < tensor->rank; ++i) { /* the recorder knows no device's bounds: a dynamic dim is 1 to 2^31-1 */
        low[i] = tensor->shape[i] < 0 ? 1 : (size_t)tensor->shape[i];
        high[i] = tensor->shape[i] < 0 ? (size_t)0x7fffffff : (size_t)tensor->shape[i];
    }
    *minInputDims = low;
    *maxInputDims = high;
    *shapeLength = tensor->rank;
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNExecutor_SetOnRunDone(OH_NNExecutor *executor, NN_OnRunDone onRunDone) {
    begin("OH_NNExecutor_SetOnRunDone", 1);
    arg_handle(executor, ID(executor));
    if (executor == NULL || onRunDone == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    executor->on_run_done = onRunDone;
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNExecutor_SetOnServiceDied(OH_NNExecutor *executor, NN_OnServiceDied onServiceDied) {
    begin("OH_NNExecutor_SetOnServiceDied", 1);
    arg_handle(executor, ID(executor));
    if (executor == NULL || onServiceDied == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    executor->on_service_died = onServiceDied;
    return end_code(OH_NN_SUCCESS);
}

/* records every input (handle, data type, shape, bytes) and fills the outputs */
static OH_NN_ReturnCode record_run(const char *function, OH_NNExecutor *executor, NN_Tensor *inputTensor[],
                                   size_t inputCount, NN_Tensor *outputTensor[], size_t outputCount) {
    size_t i;
    FILE *values;
    OH_NN_ReturnCode code = OH_NN_SUCCESS;
    int valid = executor != NULL && inputTensor != NULL && outputTensor != NULL && inputCount > 0 && outputCount > 0;
    for (i = 0; valid && i < inputCount; ++i) {
        valid = inputTensor[i] != NULL;
    }
    for (i = 0; valid && i < outputCount; ++i) {
        valid = outputTensor[i] != NULL;
    }
    begin(function, 3 + 3 * (unsigned)(valid ? inputCount : 0));
    arg_handle(executor, ID(executor));
    arg_int((long long)inputCount);
    arg_int((long long)outputCount);
    if (!valid || inputCount != executor->model->input_count || outputCount != executor->model->output_count) {
        for (i = 0; valid && i < inputCount; ++i) {
            arg_null();
            arg_null();
            arg_null();
        }
        return OH_NN_INVALID_PARAMETER;
    }
    for (i = 0; i < inputCount; ++i) {
        int dynamic;
        const NN_TensorDesc *desc = &inputTensor[i]->desc;
        size_t bytes = desc_bytes(desc, &dynamic);
        arg_int(desc->data_type);
        arg_array('i', desc->shape, desc->rank, sizeof(int32_t));
        arg_bytes(inputTensor[i]->data, bytes <= inputTensor[i]->size ? bytes : inputTensor[i]->size);
    }
    values = open_outputs();
    for (i = 0; i < outputCount; ++i) {
        NN_TensorDesc *desc = &outputTensor[i]->desc;
        if (values != NULL) {
            int status = next_output(values, desc, outputTensor[i]->data, outputTensor[i]->size);
            if (status != 0) {
                fprintf(stderr, "nnrt recorder: output %lu %s\n", (unsigned long)i,
                        status == -2 ? "does not fit its tensor" : "is missing from NNRT_SHIM_OUTPUTS");
                code = OH_NN_INVALID_PARAMETER;
                break;
            }
        } else {
            zero_output(desc, outputTensor[i]->data, outputTensor[i]->size);
        }
    }
    if (values != NULL) {
        fclose(values);
    }
    return code;
}

OH_NN_ReturnCode OH_NNExecutor_RunSync(OH_NNExecutor *executor, NN_Tensor *inputTensor[], size_t inputCount,
                                       NN_Tensor *outputTensor[], size_t outputCount) {
    OH_NN_ReturnCode code = record_run("OH_NNExecutor_RunSync", executor, inputTensor, inputCount, outputTensor,
                                       outputCount);
    end(code);
    if (trace_file != NULL) {
        fflush(trace_file);
    }
    return code;
}

OH_NN_ReturnCode OH_NNExecutor_RunAsync(OH_NNExecutor *executor, NN_Tensor *inputTensor[], size_t inputCount,
                                        NN_Tensor *outputTensor[], size_t outputCount, int32_t timeout,
                                        void *userData) {
    OH_NN_ReturnCode code;
    if (executor == NULL || executor->on_run_done == NULL || userData == NULL || timeout <= 0) {
        begin("OH_NNExecutor_RunAsync", 3);
        arg_handle(executor, ID(executor));
        arg_int((long long)inputCount);
        arg_int((long long)outputCount);
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    code = record_run("OH_NNExecutor_RunAsync", executor, inputTensor, inputCount, outputTensor, outputCount);
    end(code);
    if (code == OH_NN_SUCCESS) { /* done at once, on the caller's thread */
        executor->on_run_done(userData, code, (void **)outputTensor, (int32_t)outputCount);
    }
    return code;
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* neural_network_core.h: devices */

OH_NN_ReturnCode OH_NNDevice_GetAllDevicesID(const size_t **allDevicesID, uint32_t *deviceCount) {
    static const size_t ids[1] = {SHIM_DEVICE_ID};
    begin("OH_NNDevice_GetAllDevicesID", 0);
    if (allDevicesID == NULL || deviceCount == NULL) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    *allDevicesID = ids;
    *deviceCount = 1;
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNDevice_GetName(size_t deviceID, const char **name) {
    begin("OH_NNDevice_GetName", 1);
    arg_int((long long)deviceID);
    if (name == NULL || deviceID != SHIM_DEVICE_ID) {
        return end_code(deviceID != SHIM_DEVICE_ID ? OH_NN_FAILED : OH_NN_INVALID_PARAMETER);
    }
    *name = "nnrt_onnx recorder";
    return end_code(OH_NN_SUCCESS);
}

OH_NN_ReturnCode OH_NNDevice_GetType(size_t deviceID, OH_NN_DeviceType *deviceType) {
    begin("OH_NNDevice_GetType", 1);
    arg_int((long long)deviceID);
    if (deviceType == NULL || deviceID != SHIM_DEVICE_ID) {
        return end_code(OH_NN_INVALID_PARAMETER);
    }
    *deviceType = OH_NN_CPU;
    return end_code(OH_NN_SUCCESS);
}
