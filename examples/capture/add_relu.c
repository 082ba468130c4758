/*
 * A hand-written NNRt app (not generated): it builds y = relu(x + bias) through the NNRt C API, as an OpenHarmony
 * app would, compiles it on the first device and runs it once. `nnrt-onnx capture` compiles this file against the
 * recording shim and turns the model it builds into a .nnrt or .onnx file (docs/c_source.md):
 *
 *   nnrt-onnx capture examples/capture/add_relu.c -o add_relu.nnrt
 *
 * x: float32 [1, 4] input; bias: float32 [4], a constant; ADD with no fused activation; RELU.
 */
#include <stdio.h>
#include <string.h>

#include "neural_network_runtime/neural_network_runtime.h"

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        OH_NN_ReturnCode code_ = (call);                                                                               \
        if (code_ != OH_NN_SUCCESS) {                                                                                  \
            fprintf(stderr, "add_relu: %s failed: %d\n", #call, (int)code_);                                           \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

/* one tensor of the model: a description with data type, shape (rank 0: a scalar) and name, added to the model */
static OH_NN_ReturnCode add_tensor(OH_NNModel *model, OH_NN_DataType type, const int32_t *shape, size_t rank,
                                   const char *name) {
    OH_NN_ReturnCode code;
    NN_TensorDesc *desc = OH_NNTensorDesc_Create();
    if (desc == NULL) {
        return OH_NN_MEMORY_ERROR;
    }
    code = OH_NNTensorDesc_SetDataType(desc, type);
    if (code == OH_NN_SUCCESS && rank > 0) {
        code = OH_NNTensorDesc_SetShape(desc, shape, rank);
    }
    if (code == OH_NN_SUCCESS) {
        code = OH_NNTensorDesc_SetFormat(desc, OH_NN_FORMAT_NONE);
    }
    if (code == OH_NN_SUCCESS) {
        code = OH_NNTensorDesc_SetName(desc, name);
    }
    if (code == OH_NN_SUCCESS) {
        code = OH_NNModel_AddTensorToModel(model, desc);
    }
    OH_NNTensorDesc_Destroy(&desc);
    return code;
}

static int build(OH_NNModel *model) {
    static const int32_t vector[2] = {1, 4};
    static const int32_t channels[1] = {4};
    static const float bias[4] = {0.5f, -1.0f, 2.0f, -3.0f};
    static const int8_t no_activation = OH_NN_FUSED_NONE;
    uint32_t add_params[1] = {2}, add_inputs[2] = {0, 1}, add_outputs[1] = {3};
    uint32_t relu_inputs[1] = {3}, relu_outputs[1] = {4};
    uint32_t model_inputs[1] = {0}, model_outputs[1] = {4};
    OH_NN_UInt32Array params = {add_params, 1}, inputs = {add_inputs, 2}, outputs = {add_outputs, 1};
    OH_NN_UInt32Array no_params = {NULL, 0}, relu_in = {relu_inputs, 1}, relu_out = {relu_outputs, 1};
    OH_NN_UInt32Array io_in = {model_inputs, 1}, io_out = {model_outputs, 1};

    CHECK(add_tensor(model, OH_NN_FLOAT32, vector, 2, "x"));          /* 0 */
    CHECK(add_tensor(model, OH_NN_FLOAT32, channels, 1, "bias"));     /* 1 */
    CHECK(add_tensor(model, OH_NN_INT8, NULL, 0, "add_activation"));  /* 2 */
    CHECK(add_tensor(model, OH_NN_FLOAT32, vector, 2, "sum"));        /* 3 */
    CHECK(add_tensor(model, OH_NN_FLOAT32, vector, 2, "y"));          /* 4 */
    CHECK(OH_NNModel_SetTensorData(model, 1, bias, sizeof bias));
    CHECK(OH_NNModel_SetTensorType(model, 2, OH_NN_ADD_ACTIVATIONTYPE));
    CHECK(OH_NNModel_SetTensorData(model, 2, &no_activation, sizeof no_activation));
    CHECK(OH_NNModel_AddOperation(model, OH_NN_OPS_ADD, &params, &inputs, &outputs));
    CHECK(OH_NNModel_AddOperation(model, OH_NN_OPS_RELU, &no_params, &relu_in, &relu_out));
    CHECK(OH_NNModel_SpecifyInputsAndOutputs(model, &io_in, &io_out));
    CHECK(OH_NNModel_Finish(model));
    return 0;
}

int main(void) {
    static const float x[4] = {1.0f, 2.0f, -3.0f, 4.0f};
    const size_t *devices = NULL;
    uint32_t device_count = 0;
    OH_NNModel *model = OH_NNModel_Construct();
    OH_NNCompilation *compilation = NULL;
    OH_NNExecutor *executor = NULL;
    NN_TensorDesc *desc = NULL;
    NN_Tensor *input = NULL, *output = NULL;
    int status = 1;

    if (model == NULL || build(model) != 0) {
        OH_NNModel_Destroy(&model);
        return 1;
    }
    CHECK(OH_NNDevice_GetAllDevicesID(&devices, &device_count));
    if (device_count == 0 || (compilation = OH_NNCompilation_Construct(model)) == NULL) {
        OH_NNModel_Destroy(&model);
        return 1;
    }
    if (OH_NNCompilation_SetDevice(compilation, devices[0]) == OH_NN_SUCCESS &&
        OH_NNCompilation_Build(compilation) == OH_NN_SUCCESS &&
        (executor = OH_NNExecutor_Construct(compilation)) != NULL) {
        desc = OH_NNExecutor_CreateInputTensorDesc(executor, 0);
        input = desc != NULL ? OH_NNTensor_Create(devices[0], desc) : NULL;
        OH_NNTensorDesc_Destroy(&desc);
        desc = OH_NNExecutor_CreateOutputTensorDesc(executor, 0);
        output = desc != NULL ? OH_NNTensor_Create(devices[0], desc) : NULL;
        OH_NNTensorDesc_Destroy(&desc);
        if (input != NULL && output != NULL) {
            memcpy(OH_NNTensor_GetDataBuffer(input), x, sizeof x);
            if (OH_NNExecutor_RunSync(executor, &input, 1, &output, 1) == OH_NN_SUCCESS) {
                const float *y = (const float *)OH_NNTensor_GetDataBuffer(output);
                printf("y = %g %g %g %g\n", y[0], y[1], y[2], y[3]);
                status = 0;
            }
        }
    }
    if (input != NULL) {
        OH_NNTensor_Destroy(&input);
    }
    if (output != NULL) {
        OH_NNTensor_Destroy(&output);
    }
    if (executor != NULL) {
        OH_NNExecutor_Destroy(&executor);
    }
    OH_NNCompilation_Destroy(&compilation);
    OH_NNModel_Destroy(&model);
    return status;
}
