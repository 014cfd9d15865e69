import torch
import torch.nn as nn
import torch.nn.functional as F

class OptimizedMBConvBlock(nn.Module):
    def __init__(self, in_channels, out_channels, stride, expand_ratio):
        super(OptimizedMBConvBlock, self).__init__()
        self.use_residual = in_channels == out_channels and stride == 1
        hidden_dim = round(in_channels * expand_ratio)
        
        # Expansion phase
        self.expand_conv = nn.Conv2d(in_channels, hidden_dim, kernel_size=1, stride=1, padding=0, bias=False)
        self.expand_bn = nn.BatchNorm2d(hidden_dim)
        
        # Depthwise phase
        self.depthwise_conv = nn.Conv2d(hidden_dim, hidden_dim, kernel_size=3, stride=stride, 
                                       padding=1, groups=hidden_dim, bias=False)
        self.depthwise_bn = nn.BatchNorm2d(hidden_dim)
        
        # Projection phase
        self.project_conv = nn.Conv2d(hidden_dim, out_channels, kernel_size=1, stride=1, padding=0, bias=False)
        self.project_bn = nn.BatchNorm2d(out_channels)
        
        # For BN folding in inference mode
        self.has_bn_folded = False
    
    def _fold_bn_into_conv(self):
        """Fold BatchNorm parameters into convolution weights for inference."""
        if self.has_bn_folded:
            return
            
        # Fold BN into expansion conv
        if hasattr(self, 'expand_bn') and hasattr(self, 'expand_conv'):
            w = self.expand_conv.weight.data
            mean = self.expand_bn.running_mean
            var = self.expand_bn.running_var
            gamma = self.expand_bn.weight
            beta = self.expand_bn.bias
            eps = self.expand_bn.eps
            
            std = (var + eps).sqrt()
            t = (gamma / std).reshape(-1, 1, 1, 1)
            self.expand_conv.weight.data = w * t
            
            if self.expand_conv.bias is None:
                self.expand_conv.bias = nn.Parameter(torch.zeros(w.size(0), device=w.device, dtype=w.dtype))
            self.expand_conv.bias.data = beta - mean * gamma / std
            
        # Fold BN into depthwise conv
        if hasattr(self, 'depthwise_bn') and hasattr(self, 'depthwise_conv'):
            w = self.depthwise_conv.weight.data
            mean = self.depthwise_bn.running_mean
            var = self.depthwise_bn.running_var
            gamma = self.depthwise_bn.weight
            beta = self.depthwise_bn.bias
            eps = self.depthwise_bn.eps
            
            std = (var + eps).sqrt()
            t = (gamma / std).reshape(-1, 1, 1, 1)
            self.depthwise_conv.weight.data = w * t
            
            if self.depthwise_conv.bias is None:
                self.depthwise_conv.bias = nn.Parameter(torch.zeros(w.size(0), device=w.device, dtype=w.dtype))
            self.depthwise_conv.bias.data = beta - mean * gamma / std
            
        # Fold BN into projection conv
        if hasattr(self, 'project_bn') and hasattr(self, 'project_conv'):
            w = self.project_conv.weight.data
            mean = self.project_bn.running_mean
            var = self.project_bn.running_var
            gamma = self.project_bn.weight
            beta = self.project_bn.bias
            eps = self.project_bn.eps
            
            std = (var + eps).sqrt()
            t = (gamma / std).reshape(-1, 1, 1, 1)
            self.project_conv.weight.data = w * t
            
            if self.project_conv.bias is None:
                self.project_conv.bias = nn.Parameter(torch.zeros(w.size(0), device=w.device, dtype=w.dtype))
            self.project_conv.bias.data = beta - mean * gamma / std
            
        self.has_bn_folded = True
    
    def forward(self, x):
        if not self.training and not self.has_bn_folded:
            self._fold_bn_into_conv()
            
        identity = x if self.use_residual else None
        
        # Expansion phase - optimized for fusion
        if self.training or not self.has_bn_folded:
            x = F.relu6(self.expand_bn(self.expand_conv(x)))
        else:
            x = F.relu6(self.expand_conv(x))
        
        # Depthwise phase - optimized for fusion
        if self.training or not self.has_bn_folded:
            x = F.relu6(self.depthwise_bn(self.depthwise_conv(x)))
        else:
            x = F.relu6(self.depthwise_conv(x))
        
        # Projection phase
        if self.training or not self.has_bn_folded:
            x = self.project_bn(self.project_conv(x))
        else:
            x = self.project_conv(x)
        
        # Residual connection
        if self.use_residual:
            x = x + identity
            
        return x

class ModelNew(nn.Module):
    def __init__(self, num_classes=1000):
        """
        EfficientNetB1 architecture implementation.

        :param num_classes: The number of output classes (default is 1000 for ImageNet).
        """
        super(ModelNew, self).__init__()
        
        # Initial convolutional layer
        self.conv1 = nn.Conv2d(3, 32, kernel_size=3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        
        # MBConv blocks
        self.mbconv1 = OptimizedMBConvBlock(32, 16, 1, 1)
        self.mbconv2 = OptimizedMBConvBlock(16, 24, 2, 6)
        self.mbconv3 = OptimizedMBConvBlock(24, 40, 2, 6)
        self.mbconv4 = OptimizedMBConvBlock(40, 80, 2, 6)
        self.mbconv5 = OptimizedMBConvBlock(80, 112, 1, 6)
        self.mbconv6 = OptimizedMBConvBlock(112, 192, 2, 6)
        self.mbconv7 = OptimizedMBConvBlock(192, 320, 1, 6)
        
        # Final convolutional layer
        self.conv2 = nn.Conv2d(320, 1280, kernel_size=1, stride=1, padding=0, bias=False)
        self.bn2 = nn.BatchNorm2d(1280)
        
        # Fully connected layer
        self.fc = nn.Linear(1280, num_classes)
        
        # For CUDA graph optimization
        self.static_input = None
        self.static_output = None
        self.graph = None
        self.warmed_up = False
        self.warmup_iterations = 25  # Increased from 20 to 25
        
        # For memory format optimization
        self.channels_last = False
        
        # For BN folding in inference mode
        self.has_bn_folded = False
        
        # Set model to evaluation mode for inference optimizations
        self.eval()
    
    def _fold_bn_into_conv(self):
        """Fold BatchNorm parameters into convolution weights for inference."""
        if self.has_bn_folded:
            return
            
        # Fold BN into initial conv
        if hasattr(self, 'bn1') and hasattr(self, 'conv1'):
            w = self.conv1.weight.data
            mean = self.bn1.running_mean
            var = self.bn1.running_var
            gamma = self.bn1.weight
            beta = self.bn1.bias
            eps = self.bn1.eps
            
            std = (var + eps).sqrt()
            t = (gamma / std).reshape(-1, 1, 1, 1)
            self.conv1.weight.data = w * t
            
            if self.conv1.bias is None:
                self.conv1.bias = nn.Parameter(torch.zeros(w.size(0), device=w.device, dtype=w.dtype))
            self.conv1.bias.data = beta - mean * gamma / std
            
        # Fold BN into final conv
        if hasattr(self, 'bn2') and hasattr(self, 'conv2'):
            w = self.conv2.weight.data
            mean = self.bn2.running_mean
            var = self.bn2.running_var
            gamma = self.bn2.weight
            beta = self.bn2.bias
            eps = self.bn2.eps
            
            std = (var + eps).sqrt()
            t = (gamma / std).reshape(-1, 1, 1, 1)
            self.conv2.weight.data = w * t
            
            if self.conv2.bias is None:
                self.conv2.bias = nn.Parameter(torch.zeros(w.size(0), device=w.device, dtype=w.dtype))
            self.conv2.bias.data = beta - mean * gamma / std
            
        self.has_bn_folded = True
    
    def _optimize_memory_format(self, x):
        """Convert to channels_last memory format if on CUDA for better performance."""
        if x.is_cuda and not self.channels_last:
            self.channels_last = True
            self.to(memory_format=torch.channels_last)
            return x.to(memory_format=torch.channels_last)
        return x
    
    def _optimized_adaptive_avg_pool(self, x):
        """Optimized implementation of adaptive average pooling for 1x1 output."""
        return torch.mean(x, dim=[2, 3], keepdim=True)
    
    def _forward_impl(self, x):
        """Implementation of the forward pass without CUDA graph optimization."""
        # Optimize memory format
        x = self._optimize_memory_format(x)
        
        # Initial convolution - optimized for fusion
        if self.training or not self.has_bn_folded:
            x = F.relu(self.bn1(self.conv1(x)))
        else:
            x = F.relu(self.conv1(x))
        
        # MBConv blocks
        x = self.mbconv1(x)
        x = self.mbconv2(x)
        x = self.mbconv3(x)
        x = self.mbconv4(x)
        x = self.mbconv5(x)
        x = self.mbconv6(x)
        x = self.mbconv7(x)
        
        # Final stages - optimized for fusion
        if self.training or not self.has_bn_folded:
            x = F.relu(self.bn2(self.conv2(x)))
        else:
            x = F.relu(self.conv2(x))
        
        # Optimized pooling for inference
        if not self.training:
            x = self._optimized_adaptive_avg_pool(x)
        else:
            x = F.adaptive_avg_pool2d(x, (1, 1))
            
        x = torch.flatten(x, 1)
        x = self.fc(x)
        
        return x
    
    def _prepare_cuda_graph(self, x):
        """Prepare CUDA graph for the given input tensor."""
        if not torch.cuda.is_available():
            return False
            
        current_device = torch.cuda.current_device()
        
        # Initialize or update static tensors if input shape changes
        if (self.static_input is None or 
            self.static_input.shape != x.shape or 
            self.static_input.device != x.device):
            
            # Clean up previous graph and tensors if they exist
            if self.static_input is not None:
                self.static_input = None
                self.static_output = None
                if self.graph is not None:
                    self.graph = None
                self.warmed_up = False
                torch.cuda.empty_cache()
            
            # Create new static tensors
            self.static_input = torch.zeros_like(x, device=x.device)
            if self.channels_last:
                self.static_input = self.static_input.to(memory_format=torch.channels_last)
                
            self.static_output = None
            self.graph = None
            self.warmed_up = False
        
        # Create and capture CUDA graph if needed
        if not self.warmed_up:
            try:
                # Pre-warm the GPU
                torch.cuda.synchronize()
                
                # Ensure model is in eval mode for inference optimizations
                self.eval()
                
                # Apply BN folding for inference
                if not self.has_bn_folded:
                    self._fold_bn_into_conv()
                    for module in self.modules():
                        if isinstance(module, OptimizedMBConvBlock):
                            module._fold_bn_into_conv()
                
                # Warm up with multiple iterations
                with torch.cuda.device(current_device):
                    with torch.no_grad():
                        for _ in range(self.warmup_iterations):
                            self._forward_impl(x)
                
                # Minimal synchronization - only before graph capture
                torch.cuda.synchronize()
                
                # Capture graph
                self.static_input.copy_(x)
                self.graph = torch.cuda.CUDAGraph()
                
                with torch.cuda.graph(self.graph):
                    self.static_output = self._forward_impl(self.static_input)
                
                self.warmed_up = True
                return True
            except Exception:
                # Fallback if CUDA graph capture fails
                self.warmed_up = False
                self.graph = None
                return False
        return True
    
    def forward(self, x):
        """
        Forward pass of the EfficientNetB1 model.

        :param x: Input tensor, shape (batch_size, 3, 240, 240)
        :return: Output tensor, shape (batch_size, num_classes)
        """
        # Use CUDA graph for optimization if on GPU
        if x.is_cuda and torch.cuda.is_available():
            # Prepare CUDA graph
            graph_ready = self._prepare_cuda_graph(x)
            
            # Execute the captured graph if available
            if graph_ready and self.warmed_up and self.graph is not None:
                try:
                    self.static_input.copy_(x)
                    self.graph.replay()
                    return self.static_output
                except Exception:
                    # Silent fallback if graph replay fails
                    pass
        
        # Standard forward pass if not using CUDA graph
        with torch.no_grad():
            # Apply BN folding for inference if not done yet
            if not self.training and not self.has_bn_folded:
                self._fold_bn_into_conv()
                for module in self.modules():
                    if isinstance(module, OptimizedMBConvBlock):
                        module._fold_bn_into_conv()
            
            return self._forward_impl(x)

# Keep ALL hyperparameters EXACTLY as shown in the reference implementation
batch_size = 10
input_shape = (3, 240, 240)
num_classes = 1000

def get_inputs():
    return [torch.randn(batch_size, *input_shape)]

def get_init_inputs():
    return [num_classes]